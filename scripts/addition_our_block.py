"""addition's cpu scale as it ran before 2026-12-03: our block and the fit recipe.

    pe-research sweep scripts/addition_our_block.py --workers 2   # -> runs/addition_our_block/

experiments/addition.py runs Cho et al.'s block (RMSNorm before each sublayer and after each
residual add, a gated-GELU MLP without biases, q.k unscaled: addition.CHO_BLOCK) with the
paper's optimizer betas and no weight decay at lr 1e-3 (addition.CPU_TRAIN). This runs the same
24 configs with our block (pre-LayerNorm, a GELU MLP with biases, q.k / sqrt(head dim)) and the
fit recipe (lr 3e-3, AdamW b2 0.999, weight decay .01), and the headline model's 10,000-step cap:
the protocol of the table of 2026-12-02 in addition's docstring, so that table can be rerun
beside the current one.
"""

import dataclasses
from pathlib import Path

from pe_research.config import ModelConfig
from pe_research.sweeps.experiments import FIT_TRAIN, load_experiment

addition = load_experiment(str(Path(__file__).resolve().parents[1] / "experiments" / "addition.py"))

METRIC = "exact_match"
BLOCK = tuple(addition.CHO_BLOCK)
"""The model fields that make the block; here at the model's defaults."""
HEADLINE_STEPS = 10_000
"""The headline model's step cap in those runs (the other variants': 4,000, the scale's)."""


def runs():
    ours = {k: getattr(ModelConfig(), k) for k in BLOCK}
    fit = {k: getattr(FIT_TRAIN, k) for k in addition.CPU_RECIPE}

    def steps(cfg):
        return HEADLINE_STEPS if cfg.encoding == addition.HEADLINE else cfg.train.steps

    return [
        dataclasses.replace(
            cfg,
            model=dataclasses.replace(cfg.model, **ours),
            train=dataclasses.replace(cfg.train, steps=steps(cfg), **fit),
        )
        for cfg in addition.runs("cpu")
    ]
