"""What every task shares: the Batch, the Task base (alphabet, special tokens, the sampler), and
the prompt-answer machinery (`x_1..x_p SEP y_1..y_m`) most tasks are built from.

A task is a frozen dataclass with a pure sampler

    sample(key, batch_size, length, *, min_length=1, pad_to=None, causal=True) -> Batch

Each sequence gets its own length n, drawn uniformly from [min_length, length]; every sequence is
padded to one compiled width (`pad_to`, or the width that `length` needs), so `length` and
`min_length` may be traced values when `pad_to` is given. The vocabulary is the data alphabet
0..A-1 followed by special tokens (PAD, SEP, BLANK, then the task's own).

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


class Batch(NamedTuple):
    """One batch; arrays are [B, L] (int32 tokens, bool masks) except `coords`."""

    inputs: jax.Array  # tokens fed to the model
    targets: jax.Array  # token the model should emit at each position
    loss_mask: jax.Array  # positions scored (the answer span)
    valid: jax.Array  # real (non-padding) positions
    # [B, L, A] int32 coordinates the task gives each token, 0 at padding: (row, col) on a 2-D
    # grid (A = 2), the coupled position of a digit in addition (A = 1); None for other tasks.
    coords: jax.Array | None = None


@dataclasses.dataclass(frozen=True)
class Task(abc.ABC):
    """Base of the tasks: the alphabet, the special tokens and length bookkeeping."""

    name: ClassVar[str] = "task"
    # None: tokens form a sequence only. An int A: the batch also carries A coordinates per token
    # (Batch.coords, [B, L, A]) for an A-D position sampler to use.
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

    def check_lengths(self, train_length: int, eval_lengths: tuple[int, ...]) -> None:
        """Raise ValueError, naming the option to change, if this task cannot serve a run that
        trains on 1..train_length and evaluates at eval_lengths (any lengths, by default)."""
        return None

    def held_out(self) -> Task:
        """The task that evaluation samples: this one (fresh samples are unseen data), or for a
        corpus its validation split."""
        return self

    # False for tasks whose every sequence has exactly `length` symbols (nothing to bucket).
    variable_length: ClassVar[bool] = True

    # Whether a sequence has one right answer, so that exact match (and with it the fit verdict
    # of a run) means something; False for language modelling.
    has_exact_match: ClassVar[bool] = True

    # Bytes per token, for tasks whose tokens are bytes of text: evaluation then reports the
    # loss as bits per byte. None for symbolic tasks.
    bytes_per_token: ClassVar[int | None] = None

    def describe_eval_data(self, eval_seed: int) -> str:
        """What evaluation scores, recorded in each eval.jsonl row."""
        return f"sampled on the fly (eval seed {eval_seed})"

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


def gather_BL(x_BT: jax.Array, idx_BL: jax.Array, use_BL: jax.Array) -> jax.Array:
    """x[b, idx[b, l]] where `use` holds; indices elsewhere are never read (set to 0)."""
    return jnp.take_along_axis(x_BT, jnp.where(use_BL, idx_BL, 0), axis=1)


@dataclasses.dataclass(frozen=True)
class PromptAnswer(Task):
    """`x_1..x_p SEP y_1..y_m`: a prompt of p(n) symbols, then an answer of m(n) tokens.

    Subclasses define `answer`; lengths are functions of n so they work on ints and traced
    arrays alike. A subclass may put fixed tokens before the prompt (`lead_length`,
    `lead_token`: an instruction such as "Copy:") and make the separator several tokens
    (`separator_length`, `separator_token`): `i_1..i_k x_1..x_p s_1..s_r y_1..y_m`.
    """

    def prompt_length(self, n: Any) -> Any:
        return n

    def answer_length(self, n: Any) -> Any:
        return n

    def lead_length(self) -> int:
        """Fixed tokens before the prompt (0: none)."""
        return 0

    def lead_token(self, i: jax.Array) -> jax.Array:
        """Token i of the lead (read where i < lead_length)."""
        return jnp.full_like(i, self.sep)

    def separator_length(self) -> int:
        """Tokens between the prompt and the answer: SEP, then any further pieces."""
        return 1

    def separator_token(self, s: jax.Array) -> jax.Array:
        """Separator token s (0 is SEP)."""
        return jnp.full_like(s, self.sep)

    def seq_len(self, length: int, causal: bool) -> int:
        extra = self.lead_length() + self.separator_length() - 1
        total = self.prompt_length(length) + self.answer_length(length) + extra
        return total if causal else total + 1

    def symbols(self, key: jax.Array, shape: tuple[int, int]) -> jax.Array:
        """The prompt's data symbols, [B, T]; the prompt of row b is its first p(n_b)."""
        return jax.random.randint(key, shape, 0, self.alphabet, dtype=jnp.int32)

    @abc.abstractmethod
    def answer(
        self, x_BT: jax.Array, j_BT: jax.Array, n_B1: jax.Array, in_answer_BT: jax.Array
    ) -> jax.Array:
        """Answer token j of each row (read only where `in_answer`)."""

    def prompt(self, key: jax.Array, x_BT: jax.Array, n_B1: jax.Array) -> jax.Array:
        """The prompt tokens (read where index < p(n)): the symbols themselves by default."""
        return x_BT

    def _sequence(
        self, key: jax.Array, n_B: jax.Array, T: int
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """The full sequence [B, T]; the index of the last separator token (whose target is the
        first answer token), [B, 1]; and the answer lengths m_B1."""
        x_BT = self.symbols(key, (n_B.shape[0], T))
        n_B1 = n_B.astype(jnp.int32)[:, None]
        p_B1, m_B1 = self.prompt_length(n_B1), self.answer_length(n_B1)
        lead, seps = self.lead_length(), self.separator_length()
        i_1T = jnp.arange(T, dtype=jnp.int32)[None, :]
        j_BT = i_1T - lead - p_B1 - seps  # answer index
        in_answer = (j_BT >= 0) & (j_BT < m_B1)
        answer_BT = self.answer(x_BT, j_BT, n_B1, in_answer)
        prompt_BT = self.prompt(key, x_BT, n_B1)
        in_prompt = (i_1T >= lead) & (i_1T < lead + p_B1)
        if lead:  # the prompt's tokens move `lead` places on
            prompt_BT = gather_BL(prompt_BT, i_1T - lead + jnp.zeros_like(p_B1), in_prompt)
        seq_BT = jnp.where(
            i_1T < lead,
            self.lead_token(i_1T),
            jnp.where(
                in_prompt,
                prompt_BT,
                jnp.where(
                    i_1T < lead + p_B1 + seps,
                    self.separator_token(i_1T - lead - p_B1),
                    jnp.where(in_answer, answer_BT, self.pad),
                ),
            ),
        )
        return seq_BT.astype(jnp.int32), lead + p_B1 + seps - 1, m_B1

    def _batch(
        self, seq_BT: jax.Array, p_B1: jax.Array, m_B1: jax.Array, width: int, causal: bool
    ) -> Batch:
        B = seq_BT.shape[0]
        i_1L = jnp.arange(width, dtype=jnp.int32)[None, :]
        end_B1 = p_B1 + m_B1  # index of the last answer token in the full sequence
        if causal:
            return Batch(
                inputs=seq_BT[:, :width],
                targets=seq_BT[:, 1 : width + 1],
                loss_mask=(i_1L >= p_B1) & (i_1L < end_B1),
                valid=jnp.broadcast_to(i_1L < end_B1, (B, width)),
            )
        seq_BL = seq_BT[:, :width]
        in_answer_BL = (i_1L > p_B1) & (i_1L <= end_B1)
        return Batch(
            inputs=jnp.where(in_answer_BL, self.blank, seq_BL),
            targets=seq_BL,
            loss_mask=in_answer_BL,
            valid=jnp.broadcast_to(i_1L <= end_B1, (B, width)),
        )

    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        # One token beyond the width: decoder inputs and targets are the two shifts of it.
        seq_BT, p_B1, m_B1 = self._sequence(key, n_B, width + 1)
        return self._batch(seq_BT, p_B1, m_B1, width, causal)


def last_index(flag_BT: jax.Array) -> jax.Array:
    """For each t, the largest s <= t with flag[s] (-1 if none), int32 [B, T]."""
    idx_1T = jnp.arange(flag_BT.shape[1], dtype=jnp.int32)[None, :]
    return jax.lax.cummax(jnp.where(flag_BT, idx_1T, -1), axis=1)
