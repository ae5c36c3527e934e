"""Which rotary frequencies should time get? M-RoPE's layouts on videos longer than training's.

The `video` task shows n frames of a 3 x 3 grid, then SEP, and asks for every cell of a second
video the symbol one frame earlier and one row up in the first; each token carries (frame, row,
col) through the `mrope` sampler. With head_dim 16 (8 rotation pairs, sections (2, 3, 3)) the
layouts are `blocks` (Qwen2-VL: time on the highest frequencies), `interleaved` (Qwen3-VL: t, h,
w, t, ... over the spectrum) and `time_low` (VideoRoPE: time on the lowest), beside 1-D RoPE over
the flattened sequence. Axial 3-D RoPE needs head_dim divisible by 6 and is left out. The fit
recipe (FIT_MODEL, FIT_TRAIN) on 1-4 frames, evaluated at 4-16 frames, 3 seeds.

    pe-research sweep mrope_video --workers 2
    pe-research sweep mrope_video --scale gpu

Cost: cpu, 12 runs in 4 trainings, about 20 min on 2 CPU cores.
Results: docs/results/mrope_video/summary.md. Why the layouts differ:
docs/notes/rotary-frequencies.md.
"""

import dataclasses

from pe_research import encodings, positions, tasks
from pe_research.config import EvalConfig, RunConfig
from pe_research.sweeps.experiments import FIT_MODEL, FIT_TRAIN, GPU_MODEL, gpu_train

SCALES = {
    # The fit recipe (FIT_MODEL, FIT_TRAIN): 4 layers, until fit, at most 2,000 steps.
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
