"""addition's cpu scale with Cho et al.'s block, on the two variants that learn there.

    pe-research sweep scripts/addition_cho_block.py --workers 2   # -> runs/addition_cho_block/

experiments/addition.py runs our block (pre-LayerNorm, a GELU MLP with biases, q.k / sqrt(head
dim)); the paper's is T5's decoder with RMSNorm before each sublayer and after each residual
add, a gated-GELU MLP without biases and unscaled q.k (addition.CHO_BLOCK). This runs the same
configs with that block for the paper's headline model (learned absolute + coupling) and RoPE +
coupling, 3 seeds each: 6 runs in 2 trainings, so that what the block does to the verdict is
measured before the whole experiment is switched.

Result (2026-12-03, 35 min 35 s): neither learns in that block under the cpu recipe;
experiments/addition.py's docstring, "Cho et al.'s block".
"""

import dataclasses
from pathlib import Path

from pe_research import positions
from pe_research.sweeps.experiments import load_experiment

addition = load_experiment(str(Path(__file__).resolve().parents[1] / "experiments" / "addition.py"))

VARIANTS = ("learned", "rope")
"""Encodings whose coupled variant learns 1-8 digit addition at the cpu scale."""
METRIC = "exact_match"


def runs(scale: str = "cpu"):
    return [
        dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, **addition.CHO_BLOCK))
        for cfg in addition.runs(scale)
        if isinstance(cfg.positions, positions.Coupled) and cfg.encoding.name in VARIANTS
    ]
