"""Synthetic position-sensitive tasks, sampled on device inside the jitted step.

A task is a frozen dataclass with a pure sampler

    sample(key, batch_size, length, *, min_length=1, pad_to=None, causal=True) -> Batch

Each sequence gets its own length n, drawn uniformly from [min_length, length]; every sequence is
padded to one compiled width (`pad_to`, or the width that `length` needs), so `length` and
`min_length` may be traced values when `pad_to` is given. For the grid task n is the side of a
square grid of n * n cells. The vocabulary is the data alphabet 0..A-1 followed by special
tokens (PAD, SEP, BLANK, then the task's own: END for count_copy, one prompt token per offset).

Decoder batches (causal=True) are teacher forced: targets are the inputs shifted by one, and the
loss covers the answer span. Encoder batches (causal=False) show the prompt followed by BLANK
placeholders, and the loss covers the placeholders, as in Ruoss et al. (2023). The grid task
always uses the placeholder form (see `Grid`).

`ByteLM` is the real-text counterpart: next-byte prediction on windows of a local text corpus,
cut on device from its train split; evaluation reads its validation split (`Task.held_out`).
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from pe_research.data import text
from pe_research.registry import Registry


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


def _gather_BL(x_BT: jax.Array, idx_BL: jax.Array, use_BL: jax.Array) -> jax.Array:
    """x[b, idx[b, l]] where `use` holds; indices elsewhere are never read (set to 0)."""
    return jnp.take_along_axis(x_BT, jnp.where(use_BL, idx_BL, 0), axis=1)


@dataclasses.dataclass(frozen=True)
class _PromptAnswer(Task):
    """`x_1..x_p SEP y_1..y_m`: a prompt of p(n) symbols, then an answer of m(n) tokens.

    Subclasses define `answer`; lengths are functions of n so they work on ints and traced
    arrays alike.
    """

    def prompt_length(self, n: Any) -> Any:
        return n

    def answer_length(self, n: Any) -> Any:
        return n

    def seq_len(self, length: int, causal: bool) -> int:
        total = self.prompt_length(length) + self.answer_length(length)
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
        """The full sequence [B, T], the prompt lengths p_B1 and answer lengths m_B1."""
        x_BT = self.symbols(key, (n_B.shape[0], T))
        n_B1 = n_B.astype(jnp.int32)[:, None]
        p_B1, m_B1 = self.prompt_length(n_B1), self.answer_length(n_B1)
        i_1T = jnp.arange(T, dtype=jnp.int32)[None, :]
        j_BT = i_1T - p_B1 - 1
        in_answer = (j_BT >= 0) & (j_BT < m_B1)
        answer_BT = self.answer(x_BT, j_BT, n_B1, in_answer)
        seq_BT = jnp.where(
            i_1T < p_B1,
            self.prompt(key, x_BT, n_B1),
            jnp.where(i_1T == p_B1, self.sep, jnp.where(in_answer, answer_BT, self.pad)),
        )
        return seq_BT.astype(jnp.int32), p_B1, m_B1

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


@dataclasses.dataclass(frozen=True)
class _Rearrangement(_PromptAnswer):
    """An answer that is a fixed rearrangement of the prompt, given by `answer_source`."""

    @abc.abstractmethod
    def answer_source(self, j_BT: jax.Array, n_B1: jax.Array) -> jax.Array:
        """Index into the prompt of answer token j (0-based)."""

    def answer(
        self, x_BT: jax.Array, j_BT: jax.Array, n_B1: jax.Array, in_answer_BT: jax.Array
    ) -> jax.Array:
        return _gather_BL(x_BT, self.answer_source(j_BT, n_B1), in_answer_BT)


@dataclasses.dataclass(frozen=True)
class Copy(_Rearrangement):
    """Copy: `x_1..x_n SEP x_1..x_n`."""

    name = "copy"

    def answer_source(self, j_BT: jax.Array, n_B1: jax.Array) -> jax.Array:
        return j_BT


@dataclasses.dataclass(frozen=True)
class Reverse(_Rearrangement):
    """Reverse: `x_1..x_n SEP x_n..x_1`."""

    name = "reverse"

    def answer_source(self, j_BT: jax.Array, n_B1: jax.Array) -> jax.Array:
        return n_B1 - 1 - j_BT


@dataclasses.dataclass(frozen=True)
class Duplicate(_Rearrangement):
    """Duplicate string (Ruoss et al., 2023): `x_1..x_n SEP x_1..x_n x_1..x_n`.

    The answer has 2n tokens, so a length-n sequence takes 3n positions (3n + 1 in an encoder).
    """

    name = "duplicate"

    def answer_length(self, n: Any) -> Any:
        return 2 * n

    def answer_source(self, j_BT: jax.Array, n_B1: jax.Array) -> jax.Array:
        return jnp.where(j_BT < n_B1, j_BT, j_BT - n_B1)


@dataclasses.dataclass(frozen=True)
class CountCopy(_PromptAnswer):
    """Copy of one repeated symbol (Kazemnejad et al., 2023, "Copy (Repeat)"):
    `a a .. a SEP a a .. a END`, n symbols a in the prompt, `repeat` * n in the answer.

    Their data (McGill-NLP/length-generalization, copy task types "repeat_single_char" and
    "repeat_single_2x_char") repeat one token n times and ask for it n (or 2n) times; their
    decoder then emits an end-of-sequence token. The answer symbols carry no information, so the
    end token is the whole task: the model must count the prompt to stop after exactly
    `repeat` * n symbols. END is scored like the other answer tokens. `repeat` = 2 is their
    "Copy (Repeat 2x)". Their prompt prefix ("Copy:") is a constant and is left out.
    """

    name = "count_copy"
    repeat: int = 1

    @property
    def end(self) -> int:
        return self.alphabet + 3

    @property
    def vocab_size(self) -> int:
        return self.alphabet + 4

    def check(self) -> None:
        super().check()
        if isinstance(self.repeat, bool) or not isinstance(self.repeat, int) or self.repeat < 1:
            raise ValueError(f"count_copy repeat must be an integer >= 1, got {self.repeat!r}.")

    def answer_length(self, n: Any) -> Any:
        return self.repeat * n + 1

    def symbols(self, key: jax.Array, shape: tuple[int, int]) -> jax.Array:
        a_B1 = jax.random.randint(key, (shape[0], 1), 0, self.alphabet, dtype=jnp.int32)
        return jnp.broadcast_to(a_B1, shape)

    def answer(
        self, x_BT: jax.Array, j_BT: jax.Array, n_B1: jax.Array, in_answer_BT: jax.Array
    ) -> jax.Array:
        return jnp.where(j_BT == self.repeat * n_B1, self.end, x_BT[:, :1])


@dataclasses.dataclass(frozen=True)
class Grid(_PromptAnswer):
    """Shift a square grid: an n x n grid written row-major, SEP, then the grid shifted by
    (shift_rows, shift_cols): answer cell (r, c) holds prompt cell (r - shift_rows,
    c - shift_cols). Answer cells whose source is off the grid hold PAD and are not scored.

    The task's length is the side n: a sequence has 2n^2 + 1 tokens. `Batch.coords` gives each
    token its (row, col): prompt and answer cells their own cell's, SEP (n, 0) (the row below
    the grid, where a row-major writer goes next), padding (0, 0). Prompt and answer share one
    frame, so the rule is one fixed 2-D offset between a query and the key it must read: an
    axial 2-D encoding states it at every grid size, while over the flattened sequence the
    offset is n^2 + 1 + shift_rows * n + shift_cols, which changes with n. (A transpose reads
    cell (c, r) from (r, c), an offset that depends on where the query is; no relative
    encoding, 1-D or 2-D, states that, so it would not separate them.)

    Answer cells are always asked for by BLANK placeholders at their own coordinates, in causal
    and bidirectional models alike: with teacher forcing, the token that predicts cell (r, c)
    sits at the previous cell, and the offset to the source would jump at every row end.
    """

    name = "grid"
    position_axes = 2
    shift_rows: int = 1
    shift_cols: int = 1

    def check(self) -> None:
        super().check()
        for field in ("shift_rows", "shift_cols"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"grid {field} must be an integer, got {value!r}.")

    def prompt_length(self, n: Any) -> Any:
        return n * n

    def answer_length(self, n: Any) -> Any:
        return n * n

    def seq_len(self, length: int, causal: bool) -> int:
        return 2 * length * length + 1

    def source(self, j_BT: jax.Array, n_B1: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Prompt index read by answer cell j, and whether that cell is on the grid."""
        row, col = j_BT // n_B1 - self.shift_rows, j_BT % n_B1 - self.shift_cols
        on_grid = (row >= 0) & (row < n_B1) & (col >= 0) & (col < n_B1)
        return row * n_B1 + col, on_grid

    def answer(
        self, x_BT: jax.Array, j_BT: jax.Array, n_B1: jax.Array, in_answer_BT: jax.Array
    ) -> jax.Array:
        src_BT, on_grid_BT = self.source(j_BT, n_B1)
        read_BT = in_answer_BT & on_grid_BT
        return jnp.where(read_BT, _gather_BL(x_BT, src_BT, read_BT), self.pad)

    def coords(self, n_B: jax.Array, width: int) -> jax.Array:
        """(row, col) of every token, [B, width, 2] int32."""
        n_B1 = n_B.astype(jnp.int32)[:, None]
        i_1L = jnp.arange(width, dtype=jnp.int32)[None, :]
        cells = n_B1 * n_B1
        # Answer cell a = i - n^2 - 1 lies in the same frame as prompt cell a.
        cell_BL = jnp.where(i_1L < cells, i_1L, i_1L - cells - 1)
        on_cell = (i_1L != cells) & (i_1L <= 2 * cells)
        row = jnp.where(on_cell, cell_BL // n_B1, jnp.where(i_1L == cells, n_B1, 0))
        col = jnp.where(on_cell, cell_BL % n_B1, 0)
        return jnp.stack([row, col], axis=-1).astype(jnp.int32)

    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        seq_BT, p_B1, m_B1 = self._sequence(key, n_B, width + 1)
        batch = self._batch(seq_BT, p_B1, m_B1, width, causal=False)
        j_BL = jnp.arange(width, dtype=jnp.int32)[None, :] - p_B1 - 1
        _, on_grid_BL = self.source(j_BL, n_B.astype(jnp.int32)[:, None])
        return batch._replace(
            loss_mask=batch.loss_mask & on_grid_BL, coords=self.coords(n_B, width)
        )


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


# -- tasks of the contextual and arithmetic papers ------------------------------------------------


def _last_index(flag_BT: jax.Array) -> jax.Array:
    """For each t, the largest s <= t with flag[s] (-1 if none), int32 [B, T]."""
    idx_1T = jnp.arange(flag_BT.shape[1], dtype=jnp.int32)[None, :]
    return jax.lax.cummax(jnp.where(flag_BT, idx_1T, -1), axis=1)


def add_reversed(a_BT: jax.Array, b_BT: jax.Array, base: int) -> jax.Array:
    """Digits of a + b, least significant first (a_BT[:, k] is digit k), base `base`, [B, T].

    Without a sequential scan: the carry out of digit k is the carry generated (digit sum >=
    base) at the last digit j <= k whose sum is not base - 1 (a sum of base - 1 passes its carry
    in along). The carry out of the last column is dropped, so give a and b a zero column."""
    s_BT = a_BT + b_BT
    last_BT = _last_index(s_BT != base - 1)
    gen_BT = _gather_BL(s_BT >= base, last_BT, last_BT >= 0) & (last_BT >= 0)
    carry_in_BT = jnp.pad(gen_BT[:, :-1], ((0, 0), (1, 0))).astype(s_BT.dtype)
    return (s_BT + carry_in_BT) % base


@dataclasses.dataclass(frozen=True)
class Addition(Task):
    """Addition in reversed-digit format: `a_0 .. a_n-1 + b_0 .. b_n-1 SEP c_0 .. c_n`.

    The task's length n is the digit count of both operands (drawn like any length); digits are
    least significant first, in base `alphabet` (10: decimal), uniform, so an operand's most
    significant digit may be 0 (the zero-padded operands of Cho et al., 2024). The sum c = a + b
    always has n + 1 digits, the last being the final carry (0 or 1). SEP plays '='. Vocabulary:
    digits 0..alphabet-1, PAD, SEP, BLANK, PLUS, then `hints` hint tokens when index_hints is on.
    A sequence has 3n + 3 tokens (a decoder reads 3n + 2 of them: the last is only a target).
    Only the answer digits are scored; an encoder sees BLANK in their place.

    `index_hints` (Zhou et al., 2024, arXiv 2402.09371, "Transformers Can Achieve Length
    Generalization But Not Robustly"): each digit is preceded by a hint token h_k naming its
    significance k, the same hint in both operands and the answer:
    `h_0 a_0 h_1 a_1 .. + h_0 b_0 .. SEP h_0 c_0 .. h_n c_n`, 6n + 4 tokens. Hints are given,
    never scored (an encoder keeps them and blanks only the digits). The hint alphabet is fixed
    at `hints` tokens, so n + 1 <= hints or the run is refused; raise `hints` to the longest
    evaluated digit count + 1. Hints beyond the training length then appear only at evaluation
    (rows of the embedding table that training never updated).

    Coupled positions (Cho et al., 2024, arXiv 2405.20671, "Position Coupling"), given to the
    `coupled` position sampler in Batch.coords ([B, L, 1]): the digit of significance k of a, b
    and c, and its hint, sit at k + 1; PLUS and SEP at 0 (SEP is then the "digit -1" of the
    answer: in a decoder the token that predicts c_k always sits one coupled position below a_k
    and b_k); padding at 0. Our convention; what matters for the method, and what it keeps, is
    one position per significance. A position sampler that ignores coords numbers the tokens.
    """

    name = "addition"
    position_axes = 1
    alphabet: int = 10
    index_hints: bool = False
    hints: int = 256

    @property
    def plus(self) -> int:
        return self.alphabet + 3

    def hint(self, k: Any) -> Any:
        """The hint token of significance k."""
        return self.alphabet + 4 + k

    @property
    def vocab_size(self) -> int:
        return self.alphabet + 4 + (self.hints if self.index_hints else 0)

    @property
    def unit(self) -> int:
        """Tokens per digit: the digit, and its hint before it."""
        return 2 if self.index_hints else 1

    def check(self) -> None:
        super().check()
        if not isinstance(self.index_hints, bool):
            raise ValueError(
                f"addition index_hints must be true or false, got {self.index_hints!r}."
            )
        if isinstance(self.hints, bool) or not isinstance(self.hints, int) or self.hints < 2:
            raise ValueError(f"addition hints must be an integer >= 2, got {self.hints!r}.")

    def seq_len(self, length: int, causal: bool) -> int:
        if self.index_hints and length + 1 > self.hints:
            raise ValueError(
                f"addition with index hints: {length}-digit operands have a {length + 1}-digit "
                f"sum, each digit with its own hint, but the hint alphabet has hints={self.hints}"
                f" tokens; raise hints to at least {length + 1} (the longest evaluated digit "
                "count + 1), or evaluate fewer digits."
            )
        total = (3 * length + 1) * self.unit + 2
        return total - 1 if causal else total

    def layout(self, n_B1: jax.Array, T: int) -> dict[str, jax.Array]:
        """Where each token of [B, T] lies: operand a, b or answer c, the significance k of its
        digit, whether it is a hint, and the index of PLUS, SEP and the end of the sequence."""
        u = self.unit
        i_1T = jnp.arange(T, dtype=jnp.int32)[None, :]
        plus_B1 = n_B1 * u
        sep_B1 = 2 * n_B1 * u + 1
        end_B1 = sep_B1 + 1 + (n_B1 + 1) * u
        in_a = i_1T < plus_B1
        in_b = (i_1T > plus_B1) & (i_1T < sep_B1)
        in_c = (i_1T > sep_B1) & (i_1T < end_B1)
        r_BT = i_1T - jnp.where(in_a, 0, jnp.where(in_b, plus_B1 + 1, sep_B1 + 1))
        return {
            "i": i_1T,
            "in_a": in_a,
            "in_b": in_b,
            "in_c": in_c,
            "k": r_BT // u,
            "hint": (r_BT % u == 0) & (u == 2),
            "plus": plus_B1,
            "sep": sep_B1,
            "end": end_B1,
        }

    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        B, T = n_B.shape[0], width + 1
        k_a, k_b = jax.random.split(key)
        n_B1 = n_B.astype(jnp.int32)[:, None]
        at = self.layout(n_B1, T)
        # Digit k of each operand at column k; columns >= n are 0, so column n of c is the carry.
        in_n = jnp.arange(T, dtype=jnp.int32)[None, :] < n_B1
        a_BT = jnp.where(in_n, jax.random.randint(k_a, (B, T), 0, self.alphabet, jnp.int32), 0)
        b_BT = jnp.where(in_n, jax.random.randint(k_b, (B, T), 0, self.alphabet, jnp.int32), 0)
        c_BT = add_reversed(a_BT, b_BT, self.alphabet)
        number = at["in_a"] | at["in_b"] | at["in_c"]
        k_BT = jnp.where(number, at["k"], 0)
        digit_BT = jnp.where(
            at["in_a"],
            _gather_BL(a_BT, k_BT, number),
            jnp.where(at["in_b"], _gather_BL(b_BT, k_BT, number), _gather_BL(c_BT, k_BT, number)),
        )
        i = at["i"]
        special = jnp.where(
            i == at["plus"], self.plus, jnp.where(i == at["sep"], self.sep, self.pad)
        )
        digit_or_hint = jnp.where(at["hint"], self.hint(k_BT), digit_BT)
        seq_BT = jnp.where(number, digit_or_hint, special).astype(jnp.int32)
        answer_BT = at["in_c"] & ~at["hint"]
        i_1L = i[:, :width]
        # A decoder reads every token but the last (the last is only a target).
        valid_BL = jnp.broadcast_to(i_1L < at["end"] - (1 if causal else 0), (B, width))
        coords_BL1 = jnp.where(valid_BL & number[:, :width], k_BT[:, :width] + 1, 0)[..., None]
        coords_BL1 = coords_BL1.astype(jnp.int32)
        if causal:
            return Batch(
                inputs=seq_BT[:, :width],
                targets=seq_BT[:, 1:],
                loss_mask=answer_BT[:, 1:],
                valid=valid_BL,
                coords=coords_BL1,
            )
        return Batch(
            inputs=jnp.where(answer_BT[:, :width], self.blank, seq_BT[:, :width]),
            targets=seq_BT[:, :width],
            loss_mask=answer_BT[:, :width],
            valid=valid_BL,
            coords=coords_BL1,
        )


@dataclasses.dataclass(frozen=True)
class FlipFlop(Task):
    """Flip-flop language modelling (Liu et al., 2023, arXiv 2306.00946, "Exposing Attention
    Glitches with Flip-Flop Language Modeling"): `w x r x i x ..`, instructions each followed by
    a symbol; after a read (r) the symbol is the one of the last write (w); after a write or an
    ignore (i) it is uniform over the alphabet (their bits: alphabet 2).

    The task's length n is the number of instructions; the first is always w and the last
    always r (as in the paper), so n < 2 is taken as 2. The others are i with probability
    `p_ignore` and w or r with (1 - p_ignore) / 2 each: the paper's FFL(p_ignore), trained at
    FFL(0.8) and tested sparse (0.98) and dense (0.1). A sequence has 2n tokens. Decoder form:
    teacher forced over the whole sequence, and only the symbols after reads are scored (the
    others are random); an encoder sees BLANK after each read and is scored there. Vocabulary:
    symbols 0..alphabet-1, PAD, SEP (unused), BLANK, then w, r, i.
    """

    name = "flip_flop"
    alphabet: int = 2
    p_ignore: float = 0.8

    @property
    def write(self) -> int:
        return self.alphabet + 3

    @property
    def read(self) -> int:
        return self.alphabet + 4

    @property
    def ignore(self) -> int:
        return self.alphabet + 5

    @property
    def vocab_size(self) -> int:
        return self.alphabet + 6

    def check(self) -> None:
        super().check()
        p = self.p_ignore
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
            raise ValueError(
                f"flip_flop p_ignore must be a probability in [0, 1], got {p!r} (the paper "
                "trains at 0.8)."
            )

    def seq_len(self, length: int, causal: bool) -> int:
        return 2 * max(length, 2) - (1 if causal else 0)

    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        B, S = n_B.shape[0], width // 2 + 1  # instructions; 2S >= width + 1 tokens
        k_op, k_sym = jax.random.split(key)
        n_B1 = jnp.maximum(n_B.astype(jnp.int32), 2)[:, None]
        s_1S = jnp.arange(S, dtype=jnp.int32)[None, :]
        u_BS = jax.random.uniform(k_op, (B, S))
        p_write = (1.0 - self.p_ignore) / 2
        op_BS = jnp.where(
            u_BS < self.p_ignore,
            self.ignore,
            jnp.where(u_BS < self.p_ignore + p_write, self.write, self.read),
        )
        op_BS = jnp.where(s_1S == 0, self.write, jnp.where(s_1S == n_B1 - 1, self.read, op_BS))
        x_BS = jax.random.randint(k_sym, (B, S), 0, self.alphabet, dtype=jnp.int32)
        last_write_BS = _last_index(op_BS == self.write)  # >= 0: instruction 0 writes
        is_read_BS = op_BS == self.read
        x_BS = jnp.where(is_read_BS, _gather_BL(x_BS, last_write_BS, is_read_BS), x_BS)
        tokens_BT = jnp.stack([op_BS, x_BS], axis=-1).reshape(B, 2 * S)
        scored_BT = jnp.stack([jnp.zeros_like(is_read_BS), is_read_BS], axis=-1).reshape(B, 2 * S)
        i_1T = jnp.arange(2 * S, dtype=jnp.int32)[None, :]
        real_BT = i_1T < 2 * n_B1
        seq_BT = jnp.where(real_BT, tokens_BT, self.pad).astype(jnp.int32)
        scored_BT = scored_BT & real_BT
        i_1L = i_1T[:, :width]
        if causal:
            return Batch(
                inputs=seq_BT[:, :width],
                targets=seq_BT[:, 1 : width + 1],
                loss_mask=scored_BT[:, 1 : width + 1],
                valid=jnp.broadcast_to(i_1L < 2 * n_B1 - 1, (B, width)),
            )
        return Batch(
            inputs=jnp.where(scored_BT[:, :width], self.blank, seq_BT[:, :width]),
            targets=seq_BT[:, :width],
            loss_mask=scored_BT[:, :width],
            valid=jnp.broadcast_to(i_1L < 2 * n_B1, (B, width)),
        )


@dataclasses.dataclass(frozen=True)
class SelectiveCopy(_PromptAnswer):
    """Selective copy (Gu and Dao, 2023; the form used by Golovneva et al., 2024, arXiv
    2405.18719, CoPE): `x_1 . x_2 . . x_3 .. SEP x_1 x_2 x_3 ..`, n symbols scattered among
    noise tokens (.), answered by the n symbols in order, the noise left out.

    The task's length n is the number of symbols; the prompt also holds
    floor(n * noise_percent / 100) noise tokens, placed uniformly at random among the symbols
    (every interleaving equally likely). The CoPE paper's splits are 128 symbols with 128 noise
    tokens (noise_percent 100, in distribution), 64 (50, dense) and 256 (200, sparse).
    Vocabulary: the alphabet, PAD, SEP, BLANK, NOISE.
    """

    name = "selective_copy"
    noise_percent: int = 100

    @property
    def noise(self) -> int:
        return self.alphabet + 3

    @property
    def vocab_size(self) -> int:
        return self.alphabet + 4

    def check(self) -> None:
        super().check()
        value = self.noise_percent
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(
                f"selective_copy noise_percent must be an integer >= 0 (noise tokens per 100 "
                f"symbols), got {value!r}."
            )

    def prompt_length(self, n: Any) -> Any:
        return n + n * self.noise_percent // 100

    def answer(
        self, x_BT: jax.Array, j_BT: jax.Array, n_B1: jax.Array, in_answer_BT: jax.Array
    ) -> jax.Array:
        return _gather_BL(x_BT, j_BT, in_answer_BT)

    def prompt(self, key: jax.Array, x_BT: jax.Array, n_B1: jax.Array) -> jax.Array:
        i_1T = jnp.arange(x_BT.shape[1], dtype=jnp.int32)[None, :]
        in_prompt = i_1T < self.prompt_length(n_B1)
        # The n prompt slots of lowest score hold the symbols: a uniform n-subset of the slots.
        score_BT = jnp.where(
            in_prompt, jax.random.uniform(jax.random.fold_in(key, 1), x_BT.shape), 2.0
        )
        rank_BT = jnp.argsort(jnp.argsort(score_BT, axis=1), axis=1)
        symbol_BT = rank_BT < n_B1
        index_BT = jnp.cumsum(symbol_BT, axis=1, dtype=jnp.int32) - 1
        return jnp.where(symbol_BT, _gather_BL(x_BT, index_BT, symbol_BT), self.noise)


@dataclasses.dataclass(frozen=True)
class Counting(_PromptAnswer):
    """Counting: `q x_1 .. x_n SEP d_1 .. d_D`, the number of x_i equal to the query symbol q,
    written in D = `count_digits` decimal digits, most significant first, zero padded.

    Golovneva et al. (2024, arXiv 2405.18719, CoPE) show counting as a task where positions must
    count chosen tokens rather than all of them. This is our convention for it (their exact data
    format is not reproduced): the model must count the occurrences of the symbol named first,
    anywhere among n uniform symbols. The task's length n is the number of symbols after q;
    counts reach n, so n <= 10^D - 1 or the run is refused. Only the D digits are scored.
    Vocabulary: the alphabet, PAD, SEP, BLANK, then the digits 0-9.
    """

    name = "counting"
    alphabet: int = 4
    count_digits: int = 3

    def digit(self, d: Any) -> Any:
        return self.alphabet + 3 + d

    @property
    def vocab_size(self) -> int:
        return self.alphabet + 13

    def check(self) -> None:
        super().check()
        value = self.count_digits
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 9:
            raise ValueError(f"counting count_digits must be an integer in [1, 9], got {value!r}.")

    def prompt_length(self, n: Any) -> Any:
        return n + 1

    def answer_length(self, n: Any) -> Any:
        return self.count_digits

    def seq_len(self, length: int, causal: bool) -> int:
        if length >= 10**self.count_digits:
            raise ValueError(
                f"counting: {length} symbols can hold {length} copies of the query, more than "
                f"count_digits={self.count_digits} decimal digits write; raise count_digits to "
                f"at least {len(str(length))}."
            )
        return super().seq_len(length, causal)

    def answer(
        self, x_BT: jax.Array, j_BT: jax.Array, n_B1: jax.Array, in_answer_BT: jax.Array
    ) -> jax.Array:
        i_1T = jnp.arange(x_BT.shape[1], dtype=jnp.int32)[None, :]
        stream_BT = (i_1T >= 1) & (i_1T <= n_B1)
        count_B1 = jnp.sum(
            stream_BT & (x_BT == x_BT[:, :1]), axis=1, keepdims=True, dtype=jnp.int32
        )
        power_BT = jnp.clip(self.count_digits - 1 - j_BT, 0, self.count_digits - 1)
        return self.digit(count_B1 // 10**power_BT % 10)


# -- real text ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ByteLM(Task):
    """Next-byte prediction on a local text corpus: a window of n bytes, each predicting the next.

    `corpus` is a plain-text file (read as bytes, never decoded, so any encoding works), a
    dataset built by `pe-research data build text` (`tfds:pe_text/NAME`, read from
    $PE_RESEARCH_DATA_DIR), or `builtin:pydoc_topics` (the help topics that ship with Python,
    466 KB, a corpus that exists everywhere). The last `validation_fraction` of the bytes is held
    out (`pe_research.data.text.split_corpus`); training windows are cut from the rest and
    evaluation windows from the held-out part (`held_out`). Every window has exactly `length`
    bytes (`min_length` is ignored: a language model is trained on full contexts); the split
    is held on device and cut inside the jitted step. Decoder only.
    """

    name = "byte_lm"
    alphabet: int = 256
    corpus: str = "builtin:pydoc_topics"
    validation_fraction: float = 0.1
    split: Literal["train", "validation"] = "train"
    """The split windows are cut from; evaluation always uses the validation split."""

    def check(self) -> None:
        if self.alphabet != 256:
            raise ValueError(f"byte_lm reads bytes: alphabet must be 256, got {self.alphabet}.")
        if not 0.0 < self.validation_fraction < 1.0:
            raise ValueError(
                f"byte_lm validation_fraction must be in (0, 1), got {self.validation_fraction}."
            )
        if self.split not in ("train", "validation"):
            raise ValueError(f"byte_lm split must be train or validation, got {self.split!r}.")

    def held_out(self) -> ByteLM:
        return dataclasses.replace(self, split="validation")

    variable_length = False
    has_exact_match = False
    bytes_per_token = 1

    def describe_eval_data(self, eval_seed: int) -> str:
        return text.describe(self.corpus, self.validation_fraction)

    def seq_len(self, length: int, causal: bool) -> int:
        return length

    def split_bytes(self) -> np.ndarray:
        """This split of the corpus, uint8 (read once per process and cached)."""
        return text.corpus_split(self.corpus, self.split, self.validation_fraction)

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
        if not causal:
            raise ValueError(
                "byte_lm is next-byte prediction, a decoder task: drop --model.no-causal."
            )
        return super().sample(
            key, batch_size, length, min_length=length, pad_to=pad_to, causal=causal
        )

    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        data = self.split_bytes()
        if data.size <= width:
            raise ValueError(
                f"the {self.split} split of corpus {self.corpus!r} has {data.size} bytes, too "
                f"few for windows of {width} bytes plus the next: use a longer corpus, a larger "
                "validation_fraction, or shorter lengths."
            )
        data_T = jnp.asarray(data)
        n_B1 = n_B.astype(jnp.int32)[:, None]
        # A window of n inputs reads n + 1 bytes: start + n <= size - 1.
        start_B1 = jax.random.randint(key, n_B1.shape, 0, data.size - n_B1, dtype=jnp.int32)
        i_1L = jnp.arange(width, dtype=jnp.int32)[None, :]
        valid_BL = jnp.broadcast_to(i_1L < n_B1, (n_B.shape[0], width))
        idx_BL = jnp.where(valid_BL, start_B1 + i_1L, 0)
        inputs_BL = jnp.where(valid_BL, data_T[idx_BL].astype(jnp.int32), self.pad)
        targets_BL = jnp.where(valid_BL, data_T[idx_BL + 1].astype(jnp.int32), self.pad)
        return Batch(inputs=inputs_BL, targets=targets_BL, loss_mask=valid_BL, valid=valid_BL)


_REGISTRY: Registry[Task] = Registry(
    "task",
    "option",
    (
        Copy,
        Reverse,
        Offset,
        Duplicate,
        CountCopy,
        Grid,
        ByteLM,
        Addition,
        FlipFlop,
        SelectiveCopy,
        Counting,
    ),
)
names = _REGISTRY.names
classes = _REGISTRY.classes


def get(name: str, **options: Any) -> Task:
    """The task `name` with the given options, checked; ValueError lists the known tasks."""
    task = _REGISTRY.get(name, **options)
    task.check()
    return task


# -- held-out evaluation sequences ------------------------------------------------------------


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
