"""Which encodings let a small transformer copy, reverse and offset sequences longer than it saw?

The main job: NoPE, sinusoidal, learned absolute, RoPE and ALiBi on copy, reverse and offset
(k = 3). A 4-layer causal decoder (FIT_MODEL: d_model 64, 4 heads) trains on 1-16 symbols until
its exact match at 16, checked every 100 steps, reaches .99 (MAIN_TRAIN: at most 2,000 steps); it
is fit at .95, so a fitted run has a margin over the line. It is evaluated at 16, 32, ..., 128
symbols (1x-8x the training length), 128 sequences per length.

    pe-research sweep default --workers 2

Cost: 15 runs, one seed; its time on 2 CPU cores: docs/notes/main-job-recipe.md.
Results: docs/results/default/summary.md (tables, extrapolation, heatmaps and steps to fit).
Why lr 5e-3, and the recipe search behind it: docs/notes/main-job-recipe.md.
"""

import dataclasses

from pe_research import encodings, tasks
from pe_research.config import RunConfig
from pe_research.sweeps.experiments import FIT_MODEL, FIT_TRAIN

ENCODINGS = ["nope", "sinusoidal", "learned", "rope", "alibi"]
TASKS = ["copy", "reverse", "offset"]

MAIN_TRAIN = dataclasses.replace(
    FIT_TRAIN, learning_rate=5e-3, warmup_steps=300, stop_threshold=0.99
)
"""The main job's training: FIT_TRAIN (until fit, cap 2,000, cosine, 4 length buckets) at lr 5e-3
after 300 warm-up steps, each run stopped at its first check >= .99 rather than at the fit
(docs/notes/main-job-recipe.md). FIT_TRAIN itself stays at lr 3e-3, stopping at the fit, for the
experiments that share it."""


def runs() -> list[RunConfig]:
    return [
        RunConfig(task=tasks.get(task), encoding=encodings.get(encoding), model=FIT_MODEL,
                  train=MAIN_TRAIN)
        for task in TASKS
        for encoding in ENCODINGS
    ]  # fmt: skip
