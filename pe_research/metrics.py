"""The metrics of a run, one table read everywhere, and the one function that computes them.

Training logs `loss` and `token_accuracy` of each step (metrics.jsonl); evaluation logs every
metric of the table at each length (eval.jsonl); results.csv, the plots and summary.md take
their columns, labels and scales from the table. A metric is added here, and only here.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp
import optax


@dataclasses.dataclass(frozen=True)
class Metric:
    """One metric: its row key, how it is labelled and drawn, how seeds are combined."""

    name: str
    """Key in metrics.jsonl / eval.jsonl rows and column of results.csv."""
    label: str
    """Axis and table label."""
    bounded: bool
    """The value lies in [0, 1] and is drawn on a fixed 0-1 scale; else the scale fits the data."""
    higher_is_better: bool
    aggregate: Literal["mean"] = "mean"
    """How the values of several seeds are combined in plots and tables."""
    plotted: bool = True
    """Offered by `pe-research plot` and `sweep --metric` (see MetricName)."""


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("token_accuracy", "token accuracy", bounded=True, higher_is_better=True),
        Metric("exact_match", "sequence exact match", bounded=True, higher_is_better=True),
        # Logged but never offered to plots (nor was it before this table); bits_per_byte is its
        # plotted form for byte-level text.
        Metric(
            "loss",
            "loss (cross entropy, nats per token; lower is better)",
            bounded=False,
            higher_is_better=False,
            plotted=False,
        ),
        Metric(
            "bits_per_byte",
            "validation bits per byte (lower is better)",
            bounded=False,
            higher_is_better=False,
        ),
    )
}
"""The evaluation metrics, in the column order of results.csv. bits_per_byte is reported only
for tasks whose tokens are bytes (byte_lm) and is absent from other rows."""

MetricName = Literal["token_accuracy", "exact_match", "bits_per_byte"]
"""A metric that plots and summaries can show: the names of `plotted()` (tests check they agree;
a Literal so that the CLI offers them as choices)."""

DEFAULT_METRIC: MetricName = "token_accuracy"


def plotted() -> tuple[str, ...]:
    """Names of the metrics that plots and summaries offer, in table order."""
    return tuple(name for name, m in METRICS.items() if m.plotted)


def get(name: str, *, plot: bool = False) -> Metric:
    """The metric called `name` (one that is plotted if `plot`); ValueError names the choices."""
    known = plotted() if plot else tuple(METRICS)
    if name not in known:
        raise ValueError(f"Unknown metric {name!r}; choose one of {', '.join(known)}.")
    return METRICS[name]


def masked_metrics(
    logits_BLV: jax.Array, targets_BL: jax.Array, mask_BL: jax.Array, *, bytes_per_token: int = 0
) -> dict[str, jax.Array]:
    """Loss (mean NLL), token accuracy and exact match over the positions where mask_BL is set,
    and bits per byte when each token is `bytes_per_token` bytes (0: not byte-level text).

    Exact match is per sequence (every scored token right; a sequence without scored tokens
    counts as right), averaged over the batch. The formulation (optax cross entropy, float32 sums)
    is the training loss's: changing it changes logged training numbers in the last bits.
    """
    nll_BL = optax.softmax_cross_entropy_with_integer_labels(logits_BLV, targets_BL)
    scored_BL = mask_BL.astype(bool)
    mask_f_BL = mask_BL.astype(jnp.float32)
    count = jnp.maximum(mask_f_BL.sum(), 1.0)
    correct_BL = jnp.argmax(logits_BLV, axis=-1) == targets_BL
    out = {
        # Selected, not multiplied by the mask: a non-finite logit at a padded position must not
        # turn the loss into NaN (NaN * 0 is NaN). Same values and gradients as multiplying.
        "loss": jnp.where(scored_BL, nll_BL, 0.0).sum() / count,
        "token_accuracy": (correct_BL.astype(jnp.float32) * mask_f_BL).sum() / count,
        "exact_match": jnp.mean(jnp.all(correct_BL | ~scored_BL, axis=1)),
    }
    if bytes_per_token:
        out["bits_per_byte"] = out["loss"] / jnp.log(2.0) / bytes_per_token
    return out
