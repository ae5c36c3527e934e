"""Synthetic position-sensitive tasks, sampled on device inside the jitted step.

A task is a frozen dataclass with a pure sampler

    sample(key, batch_size, length, *, min_length=1, pad_to=None, causal=True) -> Batch

Each sequence gets its own length n, drawn uniformly from [min_length, length]; every sequence is
padded to one compiled width (`pad_to`, or the width that `length` needs), so `length` and
`min_length` may be traced values when `pad_to` is given. The vocabulary is the data alphabet
0..A-1 followed by special tokens (PAD, SEP, BLANK, then one prompt token per offset).

Decoder batches (causal=True) are teacher forced: targets are the inputs shifted by one, and the
loss covers the answer span. Encoder batches (causal=False) show the prompt followed by BLANK
placeholders, and the loss covers the placeholders, as in Ruoss et al. (2023).
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from pe_research.registry import Registry


class Batch(NamedTuple):
    """One batch; every array is [B, L] (int32 tokens, bool masks)."""

    inputs: jax.Array  # tokens fed to the model
    targets: jax.Array  # token the model should emit at each position
    loss_mask: jax.Array  # positions scored (the answer span)
    valid: jax.Array  # real (non-padding) positions


@dataclasses.dataclass(frozen=True)
class Task(abc.ABC):
    """Base of the tasks: the alphabet, the special tokens and length bookkeeping."""

    name: ClassVar[str] = "task"
    # None: one position per token (pos_BL); an int A: A coordinates per token (pos_BLA).
    position_axes: ClassVar[int | None] = None
    alphabet: int = 16

    @property
    def pad(self) -> int:
        return self.alphabet

    @property
    def sep(self) -> int:
        return self.alphabet + 1

    @property
    def blank(self) -> int:
        return self.alphabet + 2

    @property
    def vocab_size(self) -> int:
        return self.alphabet + 3

    @abc.abstractmethod
    def seq_len(self, length: int, causal: bool) -> int:
        """Model input width that a sequence of `length` data symbols needs."""

    def check(self) -> None:
        if self.alphabet < 2:
            raise ValueError(f"task alphabet must be >= 2 symbols, got {self.alphabet}.")

    def sample(
        self,
        key: jax.Array,
        batch_size: int,
        length: int | jax.Array,
        *,
        min_length: int | jax.Array = 1,
        pad_to: int | None = None,
        causal: bool = True,
    ) -> Batch:
        if pad_to is None:
            if not isinstance(length, int):
                raise ValueError("sample() needs pad_to when length is a traced value.")
            pad_to = self.seq_len(length, causal)
        elif isinstance(length, int) and self.seq_len(length, causal) > pad_to:
            raise ValueError(
                f"{self.name}: length {length} needs {self.seq_len(length, causal)} positions "
                f"but pad_to={pad_to}; raise pad_to."
            )
        if isinstance(length, int) and isinstance(min_length, int):
            if not 1 <= min_length <= length:
                raise ValueError(f"need 1 <= min_length <= length, got {min_length}, {length}.")
        k_len, k_sym = jax.random.split(key)
        n_B = jax.random.randint(k_len, (batch_size,), min_length, length + 1)
        return self._build(k_sym, n_B, pad_to, causal)

    @abc.abstractmethod
    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        """The batch for per-sequence lengths n_B, padded to `width`."""


def _gather_BL(x_BT: jax.Array, idx_BL: jax.Array, use_BL: jax.Array) -> jax.Array:
    """x[b, idx[b, l]] where `use` holds; indices elsewhere are never read (set to 0)."""
    return jnp.take_along_axis(x_BT, jnp.where(use_BL, idx_BL, 0), axis=1)


@dataclasses.dataclass(frozen=True)
class _PromptAnswer(Task):
    """`x_1..x_n SEP y_1..y_n` where y is a fixed rearrangement of x."""

    def seq_len(self, length: int, causal: bool) -> int:
        return 2 * length if causal else 2 * length + 1

    @abc.abstractmethod
    def answer_source(self, j_BT: jax.Array, n_B1: jax.Array) -> jax.Array:
        """Index into x of answer symbol j."""

    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        B = n_B.shape[0]
        T = width + 1  # the full sequence; decoder inputs/targets are its two shifts
        x_BT = jax.random.randint(key, (B, T), 0, self.alphabet, dtype=jnp.int32)
        i_1T = jnp.arange(T, dtype=jnp.int32)[None, :]
        n_B1 = n_B.astype(jnp.int32)[:, None]
        in_prompt = i_1T < n_B1
        in_answer = (i_1T > n_B1) & (i_1T <= 2 * n_B1)
        src_BT = self.answer_source(i_1T - n_B1 - 1, n_B1)
        answer_BT = _gather_BL(x_BT, src_BT, in_answer)
        seq_BT = jnp.where(
            in_prompt,
            x_BT,
            jnp.where(i_1T == n_B1, self.sep, jnp.where(in_answer, answer_BT, self.pad)),
        ).astype(jnp.int32)
        if causal:
            i_1L = i_1T[:, :width]
            return Batch(
                inputs=seq_BT[:, :width],
                targets=seq_BT[:, 1:],
                loss_mask=(i_1L >= n_B1) & (i_1L < 2 * n_B1),
                valid=jnp.broadcast_to(i_1L < 2 * n_B1, (B, width)),
            )
        seq_BL, in_answer_BL = seq_BT[:, :width], in_answer[:, :width]
        i_1L = i_1T[:, :width]
        return Batch(
            inputs=jnp.where(in_answer_BL, self.blank, seq_BL),
            targets=seq_BL,
            loss_mask=in_answer_BL,
            valid=jnp.broadcast_to(i_1L <= 2 * n_B1, (B, width)),
        )


@dataclasses.dataclass(frozen=True)
class Copy(_PromptAnswer):
    """Copy: `x_1..x_n SEP x_1..x_n`."""

    name = "copy"

    def answer_source(self, j_BT: jax.Array, n_B1: jax.Array) -> jax.Array:
        return j_BT


@dataclasses.dataclass(frozen=True)
class Reverse(_PromptAnswer):
    """Reverse: `x_1..x_n SEP x_n..x_1`."""

    name = "reverse"

    def answer_source(self, j_BT: jax.Array, n_B1: jax.Array) -> jax.Array:
        return n_B1 - 1 - j_BT


@dataclasses.dataclass(frozen=True)
class Offset(Task):
    """Relative offset: over a stream x_1..x_n, the target at position i is x_{i-k}.

    Positions i <= k have no target and are not scored. With `k_max` set, k is drawn per
    sequence from [k, k_max] and shown as a leading prompt token, so the model must read the
    offset before it can look back by it. Works in causal and bidirectional models alike.
    """

    name = "offset"
    k: int = 3
    k_max: int | None = None

    @property
    def vocab_size(self) -> int:
        return self.alphabet + 3 + (self.k_max + 1 if self.k_max is not None else 0)

    def offset_token(self, k: jax.Array) -> jax.Array:
        return self.alphabet + 3 + k

    def seq_len(self, length: int, causal: bool) -> int:
        return length + (1 if self.k_max is not None else 0)

    def check(self) -> None:
        super().check()
        if self.k < 1:
            raise ValueError(f"offset k must be >= 1, got {self.k}.")
        if self.k_max is not None and self.k_max < self.k:
            raise ValueError(f"offset k_max must be >= k={self.k}, got {self.k_max}.")

    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        B = n_B.shape[0]
        k_sym, k_off = jax.random.split(key)
        x_BL = jax.random.randint(k_sym, (B, width), 0, self.alphabet, dtype=jnp.int32)
        prompt = 0 if self.k_max is None else 1
        if self.k_max is None:
            k_B1 = jnp.full((B, 1), self.k, jnp.int32)
        else:
            k_B1 = jax.random.randint(k_off, (B, 1), self.k, self.k_max + 1, dtype=jnp.int32)
        n_B1 = n_B.astype(jnp.int32)[:, None]
        s_1L = jnp.arange(width, dtype=jnp.int32)[None, :] - prompt  # stream index
        in_stream = (s_1L >= 0) & (s_1L < n_B1)
        stream_BL = _gather_BL(x_BL, s_1L + jnp.zeros_like(n_B1), in_stream)
        inputs = jnp.where(in_stream, stream_BL, self.pad)
        if prompt:
            inputs = jnp.where(s_1L < 0, self.offset_token(k_B1), inputs)
        scored = in_stream & (s_1L >= k_B1)
        targets = _gather_BL(x_BL, s_1L - k_B1, scored)
        return Batch(
            inputs=inputs.astype(jnp.int32),
            targets=jnp.where(scored, targets, self.pad).astype(jnp.int32),
            loss_mask=scored,
            valid=jnp.broadcast_to(s_1L < n_B1, (B, width)),
        )


_REGISTRY: Registry[Task] = Registry("task", "option", (Copy, Reverse, Offset))
names = _REGISTRY.names
classes = _REGISTRY.classes


def get(name: str, **options: Any) -> Task:
    """The task `name` with the given options, checked; ValueError lists the known tasks."""
    task = _REGISTRY.get(name, **options)
    task.check()
    return task
