"""mcgill's configs with T5's tied output head, to measure what the head does.

    pe-research sweep scripts/mcgill_tied_head.py --tasks count_copy   # -> runs/mcgill_tied_head/
    pe-research sweep scripts/mcgill_tied_head.py --workers 2          # all 63 configs

Kazemnejad et al.'s decoder ties its output head to the token embeddings and scales the stream
by d_model^-0.5 before it (t5-base's tie_word_embeddings; McGill-NLP/length-generalization
src/models/custom_t5_decoder_only.py, CustomDecoderOnlyT5.forward). experiments/mcgill.py's cpu
scale has a head of its own. This runs the same configs with `ModelConfig.tie_embeddings`, every
other number unchanged, so the two sweeps differ only in the head.

Result (count_copy; the paper's T5 and NoPE, 3 seeds): experiments/mcgill.py's docstring, "The
tied head and dropout": NoPE .995 over lengths 21-40 (.929 with its own head; the paper's .99),
T5 .006 (.037; the paper's .77).
"""

import dataclasses
from pathlib import Path

from pe_research.sweeps.experiments import load_experiment

mcgill = load_experiment(str(Path(__file__).resolve().parents[1] / "experiments" / "mcgill.py"))
METRIC = "exact_match"


def runs(scale: str = "cpu"):
    return [
        dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, tie_embeddings=True))
        for cfg in mcgill.runs(scale)
    ]
