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
from pathlib import Path

from pe_research import encodings
from pe_research.sweeps.experiments import load_experiment

mcgill = load_experiment(str(Path(__file__).resolve().parents[1] / "experiments" / "mcgill.py"))

T5_BLOCK = dict(norm="rmsnorm", mlp="relu", mlp_bias=False, qk_scale="init")
CELLS = {"copy": ("alibi", "nope"), "count_copy": ("t5", "alibi", "nope")}
# Under qk_scale 'init' the model leaves q.k unscaled itself: the paper's T5 is t5(shared=True).
UNDER_T5_BLOCK = {**mcgill.PAPER_ENCODINGS, "t5": encodings.get("t5", shared=True)}
METRIC = "exact_match"


def runs():
    out = []
    for cfg in mcgill.runs("cpu"):
        for name in CELLS.get(cfg.task.name, ()):
            if cfg.encoding == mcgill.PAPER_ENCODINGS[name]:
                model = dataclasses.replace(cfg.model, **T5_BLOCK)
                out.append(dataclasses.replace(cfg, encoding=UNDER_T5_BLOCK[name], model=model))
    return out
