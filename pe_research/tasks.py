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
    # [B, L, 2] int32 (row, col) of each token on a 2-D grid, 0 at padding; None for 1-D tasks.
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
            x_BT,
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
    "task", "option", (Copy, Reverse, Offset, Duplicate, CountCopy, Grid, ByteLM)
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
