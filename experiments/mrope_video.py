"""M-RoPE on the data it was made for: which rotary frequencies should time get? M-RoPE's
layouts on a video task trained on few frames and evaluated on more.

Command (from the repository root):

    pe-research sweep mrope_video
    pe-research sweep mrope_video --scale gpu

The `video` task shows n frames of a 3 x 3 grid of symbols, frame by frame, then SEP, then asks
for every cell of a second video the symbol one frame earlier and one row up in the first (a
fixed 3-D offset). Each token carries (frame, row, col), passed through by the `mrope` sampler.
Every M-RoPE layout keeps RoPE's per-axis relative property, so each can state the rule at any
number of frames; they differ only in which rotation pairs turn with time (head_dim 16: 8
pairs, sections (2, 3, 3) for time, height, width):

- `blocks` (Qwen2-VL): time on the 2 highest frequencies, then height, then width;
- `interleaved` (Qwen3-VL): t, h, w, t, h, w, ... over the whole spectrum;
- `time_low` (VideoRoPE's frequency allocation): time on the 2 lowest frequencies.

Beside them: 1-D RoPE over the flattened sequence (the offset of one frame is then 9 tokens at
every length, so it states the rule too; what it lacks is the frame boundary). Axial 3-D RoPE
(`rope_nd`, axes=3) needs head_dim divisible by 6, which the default model's 16 is not. Trained
on 1-4 frames, evaluated on 4, 6, 8, 12 and 16 frames; the question is which layout keeps exact
match when time runs past the frames of training. VideoRoPE argues for low temporal frequencies
on long videos; with time on the highest frequencies (blocks) a frame offset is a large angle,
with time_low a tiny one.

Runtime and result: not yet run. Cost, estimated from 16 timed steps of each configuration of
this code (train.make_train_step at this file's CPU preset, seed 0) on the shared
2-core machine at load average 11 (2026-12-01): 390-590 ms per step, compile 40-46 s, where in
the same hour the default experiment's RoPE step (copy, batch 64; about 25 ms on an idle
machine, README "Speed") took 380-630 ms. So a step here costs about what that one does: 12
runs x 600 steps at about 30 ms, 4 compiles and the evaluations up to 16 frames (289 tokens) come
to roughly 10 minutes on an idle 2-core machine.
"""

from pe_research import encodings, positions, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.sweeps.experiments import GPU_MODEL, gpu_train

CPU_TRAIN = TrainConfig(steps=600, batch_size=32, train_length=4)
SCALES = {
    "cpu": (ModelConfig(), CPU_TRAIN, (4, 6, 8, 12, 16)),
    "gpu": (GPU_MODEL, gpu_train(train_length=8), (8, 12, 16, 24, 32)),
}
SEEDS = (0, 1, 2)
LAYOUTS = ("blocks", "interleaved", "time_low")


def runs(scale: str = "cpu") -> list[RunConfig]:
    model, train, lengths = SCALES[scale]
    variants = [
        *((encodings.get("mrope", assignment=a), positions.get("mrope")) for a in LAYOUTS),
        (encodings.get("rope"), positions.get("contiguous")),
    ]
    return [
        RunConfig(
            task=tasks.get("video"),
            encoding=encoding,
            positions=sampler,
            model=model,
            train=train,
            eval=EvalConfig(lengths=lengths),
            seed=seed,
        )
        for encoding, sampler in variants
        for seed in SEEDS
    ]
