"""How do the forgetting gate, HoPE and two RoPE/NoPE layer mixtures extrapolate on copy, reverse
and offset?

Trained on 1-16 symbols and evaluated at 1x-8x that length with the fit recipe (FIT_MODEL and
FIT_TRAIN in pe_research/sweeps/experiments.py: each run trains until it fits, up to a step cap),
one seed: the leaderboard (experiments/leaderboard.py) trains every encoding with the same recipe
and 3 seeds, so its RoPE rows are the ones to set these beside. HoPE keeps the rotation pairs
whose wavelength fits in the training length 16 (1 pair of 8 here: p-RoPE with p = 1/8);
rnope is NoPE in layer 3 of 4; mixture alternates RoPE and NoPE layers.

    pe-research sweep recent --workers 2

Cost: 12 runs, about 13 min on 2 CPU cores.
Results: docs/results/recent/summary.md.
"""

from pe_research import encodings, tasks
from pe_research.config import RunConfig
from pe_research.sweeps.experiments import FIT_MODEL, FIT_TRAIN

ENCODINGS = [("hope", {"train_length": 16}), ("rnope", {}), ("forgetting", {}), ("mixture", {})]
TASKS = ["copy", "reverse", "offset"]


def runs() -> list[RunConfig]:
    return [
        RunConfig(task=tasks.get(task), encoding=encodings.get(name, **options), model=FIT_MODEL,
                  train=FIT_TRAIN)
        for task in TASKS
        for name, options in ENCODINGS
    ]  # fmt: skip
