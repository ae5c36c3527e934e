"""Protocol-table cells written from the configs themselves, so that a table states what a
preset does rather than what someone typed about it."""

from __future__ import annotations

from collections.abc import Sequence

from pe_research.config import ModelConfig, TrainConfig


def sizes(model: ModelConfig) -> str:
    """Layers, width, heads and MLP of a model."""
    return (
        f"{model.num_layers} layer{'s' if model.num_layers > 1 else ''}, d_model {model.d_model}, "
        f"{model.num_heads} heads of {model.head_dim}, MLP {model.mlp_dim}"
    )


def block(model: ModelConfig) -> str:
    """The block: where and which normalisation, the MLP, the attention scaling."""
    norm = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}[model.norm]
    where = {"pre": "pre", "pre_post": "pre- and post", "post": "post"}[model.norm_position]
    mlp = {"gelu": "GELU", "geglu": "GeGLU", "relu": "ReLU"}[model.mlp]
    biases = "with" if model.mlp_bias else "without"
    logits = {
        "logits": "q.k / sqrt(head dim)",
        "init": "q.k unscaled (W_q drawn sqrt(head dim) smaller)",
    }[model.qk_scale]
    drop = "no dropout"
    if model.dropout:
        drop = f"dropout {model.dropout:g} in training on the input and each sublayer's output"
        if model.dropout_sites == "t5":
            drop += ", the attention weights, the MLP's hidden units and the last norm's output"
    head = ", output tied to the embedding (x d_model^-0.5)" if model.tie_embeddings else ""
    return f"{where}-{norm}, {mlp} MLP {biases} biases, {drop}, {logits}{head}"


def optimiser(train: TrainConfig) -> str:
    """Optimizer, learning-rate schedule, weight decay and clipping."""
    return (
        f"AdamW (b2 {train.adam_b2:g}), lr {train.learning_rate:g}, {train.warmup_steps:,} "
        f"warm-up steps then {train.lr_schedule}"
        + (" to 10%" if train.lr_schedule == "cosine" else "")
        + (" to 0" if train.lr_schedule == "linear" else "")
        + f", weight decay {train.weight_decay:g}, gradient clip {train.grad_clip:g}"
    )


def schedule(train: TrainConfig) -> str:
    """Batch, steps, and when training stops."""
    text = f"batch {train.batch_size}, {train.steps:,} steps"
    if train.stop_when_fit:
        text += (
            f" at most, stopped once exact match at the training length is >= "
            f"{train.fit_threshold:g} (checked every {train.fit_check_every:,})"
        )
    return text


def lengths(values: Sequence[int]) -> str:
    """A list of lengths, runs of consecutive ones written a-b."""
    values = sorted(set(values))
    parts, start = [], None
    for i, n in enumerate(values):
        start = n if start is None else start
        if i + 1 == len(values) or values[i + 1] != n + 1:
            parts.append(str(n) if n == start else f"{start}-{n}")
            start = None
    return ", ".join(parts)
