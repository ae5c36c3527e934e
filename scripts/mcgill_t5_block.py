"""mcgill's cpu scale with T5's block, on the cells where it disagrees with the paper most.

    pe-research sweep scripts/mcgill_t5_block.py --workers 2     # -> runs/mcgill_t5_block/

Kazemnejad et al. train a T5 decoder: RMSNorm, a ReLU MLP without biases, q.k unscaled with W_q
drawn 1/sqrt(head dim) smaller (McGill-NLP/length-generalization,
src/models/custom_t5_decoder_only.py). experiments/mcgill.py runs our block (pre-LayerNorm, GELU
with biases, q.k / sqrt(head dim)); this runs the same configs with T5's block
(`--model.norm rmsnorm --model.mlp relu --model.no-mlp-bias --model.qk-scale init`) for ALiBi
and NoPE on copy and the paper's T5, ALiBi and NoPE on count_copy, 3 seeds: 15 runs, so that
what the block does to those verdicts is measured rather than guessed. Under qk_scale 'init'
the paper's T5 is `t5(shared=True)` (the model leaves q.k unscaled itself).

Result (2026-12-03, 2-core machine, fp32 peak 374 GFLOP/s, 14 min 14 s with 2 workers):
experiments/mcgill.py's docstring, "T5's block".
"""

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments import mcgill  # noqa: E402
from pe_research import encodings  # noqa: E402

T5_BLOCK = dict(norm="rmsnorm", mlp="relu", mlp_bias=False, qk_scale="init")
PAPER_T5 = mcgill.PAPER_ENCODINGS["t5"]
CELLS = {
    "copy": ("alibi", "nope"),
    "count_copy": ("t5", "alibi", "nope"),
}
METRIC = "exact_match"


def runs():
    out = []
    for cfg in mcgill.runs("cpu"):
        names = CELLS.get(cfg.task.name, ())
        for name in names:
            if cfg.encoding != mcgill.PAPER_ENCODINGS[name]:
                continue
            # The paper's T5 under qk_scale 'init': the model already leaves q.k unscaled.
            encoding = encodings.get("t5", shared=True) if cfg.encoding == PAPER_T5 else None
            out.append(
                dataclasses.replace(
                    cfg,
                    encoding=encoding or cfg.encoding,
                    model=dataclasses.replace(cfg.model, **T5_BLOCK),
                )
            )
    return out
