"""mcgill's configs with our block instead of T5's, to measure what the block does.

    pe-research sweep scripts/mcgill_our_block.py --workers 2     # -> runs/mcgill_our_block/
    pe-research sweep scripts/mcgill_our_block.py --tasks copy    # one task

experiments/mcgill.py runs Kazemnejad et al.'s decoder block, T5's (pre-RMSNorm, a ReLU MLP without
biases, q.k unscaled with W_q drawn 1/sqrt(head dim) smaller). This runs the same 63 configs with
the model's defaults (pre-LayerNorm, a GELU MLP with biases, q.k / sqrt(head dim), a head of its
own), the block mcgill ran until 2026-12-03; the paper's T5 then undoes the model's scaling itself,
`t5(shared=True, scaled=False)`, so that its bias still adds to unscaled logits.

Result: experiments/mcgill.py's docstring, "Our block against T5's" (the our-block column is
that sweep of 2026-12-02, commits 59f30e4 and ebd0bce).
"""

import dataclasses
from pathlib import Path

from pe_research import encodings
from pe_research.config import ModelConfig
from pe_research.sweeps.experiments import load_experiment

mcgill = load_experiment(str(Path(__file__).resolve().parents[1] / "experiments" / "mcgill.py"))

# The model's defaults for the block and the head (untied), as mcgill ran until 2026-12-03.
OUR_BLOCK = {name: getattr(ModelConfig(), name) for name in (*mcgill.T5_BLOCK, "tie_embeddings")}
UNDER_OUR_BLOCK = {mcgill.PAPER_ENCODINGS["t5"]: encodings.get("t5", shared=True, scaled=False)}
METRIC = "exact_match"


def runs(scale: str = "cpu"):
    return [
        dataclasses.replace(
            cfg,
            model=dataclasses.replace(cfg.model, **OUR_BLOCK),
            encoding=UNDER_OUR_BLOCK.get(cfg.encoding, cfg.encoding),
        )
        for cfg in mcgill.runs(scale)
    ]
