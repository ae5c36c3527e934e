"""mcgill's cpu configs with an output head of their own instead of T5's tied head.

    pe-research sweep scripts/mcgill_own_head.py --tasks count_copy   # -> runs/mcgill_own_head/
    pe-research sweep scripts/mcgill_own_head.py --workers 2          # all 63 configs

Kazemnejad et al.'s decoder ties its output head to the token embeddings and scales the stream
by d_model^-0.5 before it (t5-base's tie_word_embeddings; McGill-NLP/length-generalization
src/models/custom_t5_decoder_only.py, CustomDecoderOnlyT5.forward), and so does
experiments/mcgill.py's cpu scale since 2026-12-04. Until then the cpu scale had a head of its
own: this runs the same configs that way, every other number unchanged, so the two sweeps differ
only in the head. Its configs are the cpu scale's before the change (`tie_embeddings` left at
its default is absent from config.json), so run directories of that sweep resume here.

Result: experiments/mcgill.py's docstring, "The tied head and dropout" (count_copy, NoPE .929
over lengths 21-40 with its own head, .995 tied; the paper's .99) and the own-head column of the
cpu table.
"""

import dataclasses
from pathlib import Path

from pe_research.sweeps.experiments import load_experiment

mcgill = load_experiment(str(Path(__file__).resolve().parents[1] / "experiments" / "mcgill.py"))
METRIC = "exact_match"


def runs(scale: str = "cpu"):
    return [
        dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, tie_embeddings=False))
        for cfg in mcgill.runs(scale)
    ]
