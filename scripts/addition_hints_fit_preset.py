"""addition_hints' cpu scale as it ran before 2026-12-03: the fit preset's optimiser.

    pe-research sweep scripts/addition_hints_fit_preset.py --workers 2
    # -> runs/addition_hints_fit_preset/

experiments/addition_hints.py trains at lr 1e-3 with AdamW betas (0.9, 0.95) and an 8,000-step
cap (addition_hints.CPU_TRAIN). This runs the same 15 configs with the fit preset's lr 3e-3 and
b2 0.999 and the 4,000-step cap they had: the protocol of the 0-of-15 result of 2026-12-02 in
addition_hints' docstring, so that result can be rerun beside the current one.
"""

import dataclasses
from pathlib import Path

from pe_research.sweeps.experiments import FIT_TRAIN, load_experiment

hints = load_experiment(
    str(Path(__file__).resolve().parents[1] / "experiments" / "addition_hints.py")
)

METRIC = "exact_match"
STEPS = 4000
"""The step cap of those runs."""


def runs():
    fit = {k: getattr(FIT_TRAIN, k) for k in ("learning_rate", "adam_b2")}
    return [
        dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, steps=STEPS, **fit))
        for cfg in hints.runs("cpu")
    ]
