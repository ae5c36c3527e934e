"""The held-out evaluation sequences of a length, and the power-of-two widths they are padded to."""

from __future__ import annotations

from typing import Any

import jax

from pe_research.tasks.base import Batch, Task


def bucket(width: int) -> int:
    """The smallest power of two >= width."""
    return 1 << max(width - 1, 0).bit_length()


def length_keys(root: jax.Array, length: int | jax.Array) -> tuple[jax.Array, jax.Array]:
    """(data key, positions key) of evaluation length n: from the evaluation seed and n only."""
    k_task, k_pos = jax.random.split(jax.random.fold_in(root, length))
    return k_task, k_pos


def eval_batch(
    task: Task, key: jax.Array, batch_size: int, length: Any, *, pad_to: int, causal: bool
) -> Batch:
    """The evaluation batch of one length: `batch_size` sequences of exactly `length`, from the
    task's held-out data. Built evaluation sets (pe_research.data) store exactly these."""
    return task.held_out().sample(
        key, batch_size, length, min_length=length, pad_to=pad_to, causal=causal
    )
