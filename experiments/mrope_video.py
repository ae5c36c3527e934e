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

Beside them: 1-D RoPE over the flattened sequence, where an answer cell sits 9n + 13 tokens
after its source (n frames of 9 cells, SEP, one frame and one row back): a distance that grows
with n, so training on 1-4 frames never shows the ones met beyond. Axial 3-D RoPE (`rope_nd`,
axes=3) needs head_dim divisible by 6, which the main job's model's 16 is not. Trained
on 1-4 frames, evaluated on 4, 6, 8, 12 and 16 frames; the question is which layout keeps exact
match when time runs past the frames of training. VideoRoPE argues for low temporal frequencies
on long videos; with time on the highest frequencies (blocks) a frame offset is a large angle,
with time_low a tiny one.

The `cpu` preset is the fit recipe (FIT_MODEL and FIT_TRAIN, pe_research/sweeps/experiments.py: 4
layers, d_model 64, 4 heads of 16, lr 3e-3 after 200 warm-up steps, each run trained until it fits,
exact match >= .95 at 4 frames, checked every 100 steps, at most 2,000 steps), 3 seeds: 12 runs in
4 trainings.

Runtime and result (`pe-research sweep mrope_video --workers 2`, 2026-12-02, commit 90ef4ca
with this preset, committed right after; the 2-core machine alone): 22 min 20 s for 12 runs in
4 trainings; all 12 fit. Token accuracy at 6 / 8 / 12 / 16 frames and exact match at 6, mean over
3 seeds (steps to fit):

    layout                        token accuracy          exact match at 6   steps to fit
    interleaved (Qwen3-VL)        .99 / .84 / .69 / .58   .82                700
    time_low (VideoRoPE)          .76 / .59 / .34 / .21   0                  933
    blocks (Qwen2-VL)             .59 / .25 / .15 / .11   0                  1,467
    1-D RoPE, flattened           .07 / .06 / .06 / .06   0                  200

Every run's exact match is 0 from 8 frames on (chance token accuracy is 1/16). Spreading time
over the whole spectrum (interleaved) keeps the rule furthest past the training frames; time on
the highest frequencies (blocks) loses it soonest, and also takes twice as many steps to fit:
with 8 pairs, blocks leaves width the three lowest frequencies (base^-5/8 to base^-7/8, angles
under .01 rad across the 3 columns). 1-D RoPE fits first and fails at once beyond: the frame
distance from an answer cell to its source grows with the number of frames.

The earlier preset (2 layers, 600 steps, batch 32, no fit check; `pe-research sweep mrope_video
--workers 2`, 2026-12-02, code of commit 90ef4ca, 7 min 20 s on the 2-core machine) left 8 of 12
runs unfit, so it compared nothing: exact match at 4 frames (the training length) of blocks 0 /
0 / 0, time_low 0 / 0 / 0, interleaved .68 / .97 / .71 (seeds 0-2), 1-D RoPE 1.0 in all three;
beyond 4 frames the fit runs had interleaved (seed 1) .80 at 6 frames and .02 at 8, RoPE 0 at 6.
"""

import dataclasses

from pe_research import encodings, positions, tasks
from pe_research.config import EvalConfig, RunConfig
from pe_research.sweeps.experiments import FIT_MODEL, FIT_TRAIN, GPU_MODEL, gpu_train

SCALES = {
    # The main job's recipe (experiments/default.py): 4 layers, until fit, at most 2,000 steps.
    "cpu": (FIT_MODEL, dataclasses.replace(FIT_TRAIN, train_length=4), (4, 6, 8, 12, 16)),
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
