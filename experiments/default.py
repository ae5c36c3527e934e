"""Which encodings let a small transformer copy and offset sequences longer than it saw?

The main job: NoPE, sinusoidal, learned absolute, RoPE and ALiBi on copy and offset (k = 3). A
4-layer causal decoder (FIT_MODEL: d_model 64, 4 heads) trains on 1-16 symbols until its exact
match at 16, checked every 100 steps, reaches .99 (MAIN_TRAIN: at most 2,000 steps, offset
3,000); it is fit at .95, so a fitted run has a margin over the line. It is evaluated at 16, 32,
..., 128 symbols (1x-8x the training length), 128 sequences per length.

    pe-research sweep default --workers 2

Cost: 10 runs, one seed; its time on 2 CPU cores: docs/notes/main-job-recipe.md.
Results: docs/results/default/summary.md (tables, extrapolation, heatmaps and steps to fit).
The recipe, and why the grid is these 10 runs: docs/notes/main-job-recipe.md. Reverse and every
other encoding are in the leaderboard (experiments/leaderboard.py).
"""

import dataclasses

from pe_research import encodings, tasks
from pe_research.config import RunConfig
from pe_research.sweeps.experiments import FIT_MODEL, FIT_TRAIN

ENCODINGS = ["nope", "sinusoidal", "learned", "rope", "alibi"]
TASKS = ["copy", "offset"]

MAIN_TRAIN = dataclasses.replace(
    FIT_TRAIN, learning_rate=5e-3, warmup_steps=300, stop_threshold=0.99
)
"""The main job's training: FIT_TRAIN (until fit, cap 2,000, cosine, 4 length buckets) at lr 5e-3
after 300 warm-up steps, each run stopped at its first check >= .99 rather than at the fit
(docs/notes/main-job-recipe.md). FIT_TRAIN itself stays at lr 3e-3, stopping at the fit, for the
experiments that share it."""
STEPS = {"copy": 2000, "offset": 3000}
"""Each task's step cap (the cosine schedule's length): ALiBi reaches .98 on offset only in the
last stretch of a 3,000-step schedule, and offset's steps are a third of copy's cost."""


def runs() -> list[RunConfig]:
    return [
        RunConfig(task=tasks.get(task), encoding=encodings.get(encoding), model=FIT_MODEL,
                  train=dataclasses.replace(MAIN_TRAIN, steps=STEPS[task]))
        for task in TASKS
        for encoding in ENCODINGS
    ]  # fmt: skip
