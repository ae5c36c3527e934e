"""The encodings added in 2024-25 on the main job: forgetting gate, HoPE and two RoPE/NoPE layer
mixtures, trained until fit with the fit recipe (FIT_MODEL, FIT_TRAIN: the main job's model at
lr 3e-3), one seed.

Command (from the repository root):

    pe-research sweep recent --workers 2

Same tasks, model (4 layers, d_model 64, 4 heads), recipe (lr 3e-3, 200 warm-up steps, at most
2,000 steps, 4 length buckets, until exact match >= .95 at 16) and evaluation (16-128, 1x-8x)
as the main job, so its table sits beside the main job's. HoPE keeps the rotation pairs whose
wavelength fits in the training length 16: with 16-dimensional heads that is 1 pair of 8 (the
fastest), p-RoPE with p = 1/8. rnope is NoPE in layer 3 of 4; mixture alternates RoPE and NoPE.

Runtime: 13 min 8 s with 2 workers on the 2-core machine (12 runs, one seed).

Result: every run fits. Token accuracy at 2x (32) / 8x (128) the training length, exact match
at 2x in brackets, then the first fit step:

    encoding           copy                    reverse                 offset
    forgetting         .99 / .56 [.68] @1400   .77 / .14 [.01] @1600   1.0 / 1.0 [.93] @1100
    hope(16)           .46 / .11 [.00] @1500   .79 / .23 [.00] @1000   .95 / .47 [.22] @100
    rnope              .13 / .07 [.00] @900    .30 / .10 [.00] @1200   .98 / .79 [.58] @100
    mixture(rope,nope) .12 / .06 [.00] @1000   .43 / .09 [.00] @1000   .96 / .67 [.32] @100

Next to the main job (same recipe; its docstring): the forgetting gate, a learned data-dependent
recency bias, extrapolates like ALiBi (main job copy .99 / .77, offset .96 / .82) and better on
offset (exact match .84 at 8x). HoPE is well above RoPE on copy and reverse at 2x (RoPE .09 and
.36), as p-RoPE with a small p was in the prope experiment, and below it on offset (RoPE
.99 / .81). The RoPE/NoPE hybrids stay near RoPE: one or two NoPE layers do not change how
these small models extrapolate. One seed: spreads between seeds in the main job's tasks are
up to .1.
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
