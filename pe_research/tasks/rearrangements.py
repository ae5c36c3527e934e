"""Tasks whose answer rearranges the prompt: copy, reverse, duplicate (Ruoss et al., 2023),
count_copy (Kazemnejad et al., 2023), sort, and the relative offset stream (n-back)."""

from __future__ import annotations

import abc
import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from pe_research.tasks.base import Batch, PromptAnswer, Task, gather_BL


@dataclasses.dataclass(frozen=True)
class _Instructed(PromptAnswer):
    """A prompt-answer task that can show an instruction before its prompt and a separator of
    several tokens, as Kazemnejad et al. (2023) format their instances: `Copy: {source} [SEP]
    {target} </s>` (McGill-NLP/length-generalization: copy_instance_processor.py writes "Copy: "
    (or "Reverse: "), configs/data/s2s_copy.jsonnet adds "[SEP] ", and T5's tokenizer splits
    each into several pieces).

    `prefix` k: k fixed instruction tokens before the prompt (0: none). `separator` r: the
    prompt and the answer are separated by SEP and r - 1 further fixed tokens. The instruction
    and separator tokens come after the task's own vocabulary; scoring is unchanged (the answer
    and END). Under a relative encoding or none, a prompt of one repeated symbol (count_copy)
    gives every prompt position the same hidden state unless something distinct precedes it.
    """

    prefix: int = 0
    separator: int = 1

    @property
    def own_vocab_size(self) -> int:
        """The vocabulary without the instruction and separator tokens."""
        return self.alphabet + 3

    @property
    def vocab_size(self) -> int:
        return self.own_vocab_size + self.prefix + self.separator - 1

    def check(self) -> None:
        super().check()
        for name, least in (("prefix", 0), ("separator", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(
                    f"{self.name} {name} must be an integer >= {least} (tokens: "
                    f"{'an instruction before the prompt' if name == 'prefix' else 'SEP and more'}"
                    f"), got {value!r}."
                )

    def lead_length(self) -> int:
        return self.prefix

    def lead_token(self, i: jax.Array) -> jax.Array:
        return self.own_vocab_size + i

    def separator_length(self) -> int:
        return self.separator

    def separator_token(self, s: jax.Array) -> jax.Array:
        return jnp.where(s == 0, self.sep, self.own_vocab_size + self.prefix + s - 1)


@dataclasses.dataclass(frozen=True)
class _Rearrangement(_Instructed):
    """An answer that is a fixed rearrangement of the prompt, given by `answer_source`.

    `end_token`: the answer ends with END, scored like its other tokens, as every target of
    Kazemnejad et al. (2023) ends with the decoder's end-of-sequence token (their data:
    McGill-NLP/length-generalization, scripts/dataset_builders/make_copy_dataset.py and
    make_reverse_dataset.py; the tokenizer appends it). A decoder then has to say where its
    answer stops; an encoder fills END into the BLANK after the answer. END is the token after
    the specials (alphabet + 3), as in count_copy.
    """

    end_token: bool = False

    @property
    def end(self) -> int:
        return self.alphabet + 3

    @property
    def own_vocab_size(self) -> int:
        return self.alphabet + (4 if self.end_token else 3)

    def check(self) -> None:
        super().check()
        if not isinstance(self.end_token, bool):
            raise ValueError(
                f"{self.name} end_token must be true or false, got {self.end_token!r}."
            )

    def content_length(self, n: Any) -> Any:
        """Answer tokens before END: the rearranged symbols."""
        return n

    def answer_length(self, n: Any) -> Any:
        return self.content_length(n) + (1 if self.end_token else 0)

    @abc.abstractmethod
    def answer_source(self, j_BT: jax.Array, n_B1: jax.Array) -> jax.Array:
        """Index into the prompt of answer token j (0-based)."""

    def answer(
        self, x_BT: jax.Array, j_BT: jax.Array, n_B1: jax.Array, in_answer_BT: jax.Array
    ) -> jax.Array:
        content_BT = j_BT < self.content_length(n_B1)
        symbols_BT = gather_BL(x_BT, self.answer_source(j_BT, n_B1), in_answer_BT & content_BT)
        return jnp.where(content_BT, symbols_BT, self.end)


@dataclasses.dataclass(frozen=True)
class Copy(_Rearrangement):
    """Copy: `x_1..x_n SEP x_1..x_n` (then END with `end_token`)."""

    name = "copy"

    def answer_source(self, j_BT: jax.Array, n_B1: jax.Array) -> jax.Array:
        return j_BT


@dataclasses.dataclass(frozen=True)
class Reverse(_Rearrangement):
    """Reverse: `x_1..x_n SEP x_n..x_1` (then END with `end_token`)."""

    name = "reverse"

    def answer_source(self, j_BT: jax.Array, n_B1: jax.Array) -> jax.Array:
        return n_B1 - 1 - j_BT


@dataclasses.dataclass(frozen=True)
class Duplicate(_Rearrangement):
    """Duplicate string (Ruoss et al., 2023): `x_1..x_n SEP x_1..x_n x_1..x_n`.

    The answer has 2n tokens (2n + 1 with `end_token`), so a length-n sequence takes 3n
    positions (3n + 1 in an encoder).
    """

    name = "duplicate"

    def content_length(self, n: Any) -> Any:
        return 2 * n

    def answer_source(self, j_BT: jax.Array, n_B1: jax.Array) -> jax.Array:
        return jnp.where(j_BT < n_B1, j_BT, j_BT - n_B1)


@dataclasses.dataclass(frozen=True)
class Sort(PromptAnswer):
    """Sort: `x_1..x_n SEP y_1..y_n`, y the symbols of x in ascending order, repeats kept.

    The sort task of the ASEntmax paper's synthetic suite (Vasylenko et al., 2025, arXiv
    2506.16640; deep-spin/asentmax, scripts/generate_data.py: uniform symbols, the target
    `np.sort` of them), in our prompt-answer form: their vocabulary is 32 symbols and their
    training lengths 32-64; here the alphabet is an option (default 16) and lengths are drawn
    like every task's. Unlike copy and reverse, the answer's order depends on the symbols, not
    on the positions alone.
    """

    name = "sort"

    def answer(
        self, x_BT: jax.Array, j_BT: jax.Array, n_B1: jax.Array, in_answer_BT: jax.Array
    ) -> jax.Array:
        i_1T = jnp.arange(x_BT.shape[1], dtype=jnp.int32)[None, :]
        # Symbols beyond the prompt sort after every real one (they are never read).
        sorted_BT = jnp.sort(jnp.where(i_1T < n_B1, x_BT, self.alphabet), axis=1)
        return gather_BL(sorted_BT, j_BT, in_answer_BT)


@dataclasses.dataclass(frozen=True)
class CountCopy(_Instructed):
    """Copy of one repeated symbol (Kazemnejad et al., 2023, "Copy (Repeat)"):
    `a a .. a SEP a a .. a END`, n symbols a in the prompt, `repeat` * n in the answer.

    Their data (McGill-NLP/length-generalization, copy task types "repeat_single_char" and
    "repeat_single_2x_char") repeat one token n times and ask for it n (or 2n) times; their
    decoder then emits an end-of-sequence token. The answer symbols carry no information, so the
    end token is the whole task: the model must count the prompt to stop after exactly
    `repeat` * n symbols. END is scored like the other answer tokens. `repeat` = 2 is their
    "Copy (Repeat 2x)". Their instance format, an instruction before the prompt and a
    separator of several tokens, is `prefix` and `separator` (_Instructed).
    """

    name = "count_copy"
    repeat: int = 1

    @property
    def end(self) -> int:
        return self.alphabet + 3

    @property
    def own_vocab_size(self) -> int:
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
class Offset(Task):
    """Relative offset: over a stream x_1..x_n, the target at position i is x_{i-k}.

    This is the n-back task (n = k) of the ASEntmax paper's suite (deep-spin/asentmax, NBack:
    the target at each position is the token num_steps earlier). Positions i <= k have no
    target and are not scored. With `k_max` set, k is drawn per
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
        stream_BL = gather_BL(x_BL, s_1L + jnp.zeros_like(n_B1), in_stream)
        inputs = jnp.where(in_stream, stream_BL, self.pad)
        if prompt:
            inputs = jnp.where(s_1L < 0, self.offset_token(k_B1), inputs)
        scored = in_stream & (s_1L >= k_B1)
        targets = gather_BL(x_BL, s_1L - k_B1, scored)
        return Batch(
            inputs=inputs.astype(jnp.int32),
            targets=jnp.where(scored, targets, self.pad).astype(jnp.int32),
            loss_mask=scored,
            valid=jnp.broadcast_to(s_1L < n_B1, (B, width)),
        )
