"""Which encodings let a small transformer copy and offset sequences longer than it saw?

The main job: NoPE, sinusoidal, learned absolute, RoPE and ALiBi on copy and offset (k = 3). A
4-layer causal decoder (FIT_MODEL) trains on 1-16 symbols until its exact match at 16 reaches
MAIN_TRAIN's stop threshold, above the fit threshold, so a fitted run has a margin over the
line (STEPS caps each task). It is evaluated at 16, 32, ..., 128 symbols (1x-8x the training
length).

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
"""The main job's training: FIT_TRAIN (checked for fit, cosine, length buckets) at a higher rate,
each run stopped at its first check at stop_threshold rather than at the fit; why:
docs/notes/main-job-recipe.md. FIT_TRAIN itself stops at the fit, for the experiments that
share it."""
STEPS = {"copy": 2000, "offset": 3000}
"""Each task's step cap (the cosine schedule's length): offset gets the longer schedule its
slowest encoding needs to reach the stop threshold, and its steps cost a third of copy's."""


def runs() -> list[RunConfig]:
    return [
        RunConfig(task=tasks.get(task), encoding=encodings.get(encoding), model=FIT_MODEL,
                  train=dataclasses.replace(MAIN_TRAIN, steps=STEPS[task]))
        for task in TASKS
        for encoding in ENCODINGS
    ]  # fmt: skip
