"""The recipe probe behind addition.CPU_TRAIN: the paper's headline model (learned absolute +
coupling) in Cho et al.'s block, seed 0, 4,000 steps at most, under three optimiser settings.

    pe-research sweep scripts/addition_recipes.py --workers 2   # -> runs/addition_recipes/

Result (2026-12-03, about 7 min with 2 workers; exact match at 8 / 12 / 16 / 24 / 32 digits):
the fit recipe (lr 3e-3, AdamW b2 0.999, weight decay .01) .05 at 8, unfit; lr 1e-3 with those
betas .77 at 8, unfit; lr 1e-3 with the paper's betas (0.9, 0.95) and no weight decay fit by
2,600 steps, .96 / .61 / .39 / .16 / .10.
"""

import dataclasses
from pathlib import Path

from pe_research.sweeps.experiments import FIT_TRAIN, load_experiment

addition = load_experiment(str(Path(__file__).resolve().parents[1] / "experiments" / "addition.py"))

METRIC = "exact_match"
FIT = {k: getattr(FIT_TRAIN, k) for k in addition.CPU_RECIPE}
RECIPES = {
    "fit recipe": FIT,
    "lr 1e-3": {**FIT, "learning_rate": 1e-3},
    "lr 1e-3, the paper's betas, no weight decay": addition.CPU_RECIPE,
}  # fmt: skip


def runs():
    headline = next(c for c in addition.runs() if c.encoding == addition.HEADLINE and c.seed == 0)
    return [
        dataclasses.replace(
            headline, train=dataclasses.replace(headline.train, steps=4000, **changes)
        )
        for changes in RECIPES.values()
    ]
