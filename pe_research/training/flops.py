"""Analytic FLOPs of the model's matmuls: a training step, an evaluation, a whole run.

Matmuls only (projections, attention scores and values, MLP, output head), counted as 2 per
multiply-add, and x3 for a training step (forward, and a backward pass of twice the forward).
The bench (pe_research.bench) reports XLA's own count of the compiled step next to these; the
sweep's cost estimate (sweeps/cost.py) adds them up over an experiment.
"""

from __future__ import annotations

from pe_research.config import RunConfig
from pe_research.tasks import bucket
from pe_research.training.step import bucket_widths


def matmul_flops(cfg: RunConfig, width: int) -> float:
    """Forward matmul FLOPs of one sequence of `width` tokens."""
    m = cfg.model
    L, D, F, V = width, m.d_model, m.mlp_dim, cfg.task.vocab_size
    HK = m.num_heads * m.head_dim
    mlp_matrices = 3 if m.mlp == "geglu" else 2
    per_layer = (
        2 * L * D * 3 * HK + 2 * L * HK * D + 2 * 2 * L * L * HK + 2 * mlp_matrices * L * D * F
    )
    return m.num_layers * per_layer + 2 * L * D * V


def train_step_flops(cfg: RunConfig, num_models: int = 1) -> float:
    """Matmul FLOPs of one training step (forward and backward), padding included: each length
    bucket's sequences at its own width."""
    per_bucket = cfg.train.batch_size // cfg.train.length_buckets
    return 3 * sum(matmul_flops(cfg, w) * per_bucket for w in bucket_widths(cfg)) * num_models


def eval_flops(cfg: RunConfig) -> float:
    """Forward FLOPs of evaluating one run: eval.batch_size sequences per evaluation length,
    each padded to its power-of-two bucket, as evaluation computes them."""
    widths = [bucket(cfg.task.seq_len(n, cfg.model.causal)) for n in cfg.eval_lengths]
    return cfg.eval.batch_size * sum(matmul_flops(cfg, w) for w in widths)


def fit_check_flops(cfg: RunConfig) -> float:
    """Forward FLOPs of one fit check (train.stop_when_fit): the evaluation batch at the length
    the fit verdict reads; 0 for a run that does not check."""
    if not cfg.train.stop_when_fit or cfg.fit_length is None:
        return 0.0
    width = bucket(cfg.task.seq_len(cfg.fit_length, cfg.model.causal))
    return cfg.eval.batch_size * matmul_flops(cfg, width)
