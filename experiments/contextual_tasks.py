"""Contextual positions: do CoPE's counted positions beat token positions on the tasks of the
CoPE paper (flip-flop, selective copy, counting), in distribution and at longer lengths?

Command (from the repository root):

    pe-research sweep contextual_tasks --workers 2
    pe-research sweep contextual_tasks --scale gpu

Tasks (tasks.py), decoder form, exact match over the scored tokens:
- flip_flop: Liu et al. (2023, arXiv 2306.00946) FFL(0.8), n instructions w/r/i each followed
  by a bit; the bits after reads (the last written bit) are scored.
- selective_copy: n symbols scattered among n noise tokens, answered by the symbols in order.
- counting: how many of n symbols equal the query symbol named first, in 3 decimal digits (our
  convention; see tasks.Counting).
Encodings CoPE, RoPE, NoPE and ALiBi, 3 seeds each, trained until fit (exact match >= 0.95 at
the training length).

CPU preset: 2 layers, d_model 64, 4 heads; lengths 1-8 in 4 buckets, lr 3e-3 after 100 warm-up
steps, cosine over a cap of 1,000 steps, fit checked every 100; evaluated at 8, 16 and 32 (up to
4x), 128 sequences per length. GPU preset: 4 layers, d_model 256, lengths 1-32, evaluated to 8x.

Published claim (Golovneva et al., 2024, arXiv 2405.18719, "Contextual Position Encoding"): CoPE
solves selective copy, counting and flip-flop where absolute and relative position embeddings
fail, in distribution and on their out-of-distribution splits (denser or sparser noise, more
ignores). Their splits change the density at a fixed length; this sweep changes the length at
the training density (a run evaluates the task it trained on), so it tests the direction of the
claim, not its numbers.

Runtime: not yet run. Estimate from single steps timed on the shared 2-core machine (20-50 ms
per step of one 2-layer model at length 16, CoPE on selective copy 4x slower; about 30 s to
compile): 12 groups of 3 packed seeds at up to 1,000 steps, about 20-30 minutes with 2 workers.

Result: not yet run.
"""

import dataclasses

from pe_research import encodings, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig
from pe_research.sweeps.experiments import FIT_TRAIN, GPU_MODEL, gpu_train

ENCODINGS = ["cope", "rope", "nope", "alibi"]
TASKS = ["flip_flop", "selective_copy", "counting"]
SEEDS = (0, 1, 2)
SCALES = {
    "cpu": (
        ModelConfig(num_layers=2),
        dataclasses.replace(FIT_TRAIN, train_length=8, steps=1000, warmup_steps=100),
        (8, 16, 32),
    ),
    "gpu": (
        GPU_MODEL,
        gpu_train(length_buckets=4, stop_when_fit=True, fit_check_every=250, log_every=250),
        (32, 64, 128, 256),
    ),
}


def runs(scale: str = "cpu") -> list[RunConfig]:
    model, train, lengths = SCALES[scale]
    return [
        RunConfig(
            task=tasks.get(task),
            encoding=encodings.get(encoding),
            model=model,
            train=train,
            eval=EvalConfig(lengths=lengths),
            seed=seed,
        )
        for task in TASKS
        for encoding in ENCODINGS
        for seed in SEEDS
    ]
