"""Arithmetic in reversed-digit format: addition (Zhou et al., 2024; Cho et al., 2024) and
multiplication (McLeish et al., 2024)."""

from __future__ import annotations

import abc
import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from pe_research.tasks.base import Batch, Task, gather_BL, last_index


def add_reversed(a_BT: jax.Array, b_BT: jax.Array, base: int) -> jax.Array:
    """Digits of a + b, least significant first (a_BT[:, k] is digit k), base `base`, [B, T].

    Without a sequential scan: the carry out of digit k is the carry generated (digit sum >=
    base) at the last digit j <= k whose sum is not base - 1 (a sum of base - 1 passes its carry
    in along). The carry out of the last column is dropped, so give a and b a zero column."""
    s_BT = a_BT + b_BT
    last_BT = last_index(s_BT != base - 1)
    gen_BT = gather_BL(s_BT >= base, last_BT, last_BT >= 0) & (last_BT >= 0)
    carry_in_BT = jnp.pad(gen_BT[:, :-1], ((0, 0), (1, 0))).astype(s_BT.dtype)
    return (s_BT + carry_in_BT) % base


def multiply_reversed(a_BT: jax.Array, b_BT: jax.Array, base: int) -> jax.Array:
    """Digits of a * b, least significant first, base `base`, [B, T] (the product's digits
    beyond column T - 1 are dropped: give a and b enough zero columns).

    Column sums s_k = sum_{i + j = k} a_i b_j (a convolution, exact in float32 while
    T (base - 1)^2 < 2^24), then one scan over the columns carries s_k + carry into digit and
    carry: carries exceed 1 here, so the closed form of `add_reversed` does not apply."""
    T = a_BT.shape[1]
    conv = jax.vmap(lambda a, b: jnp.convolve(a, b, precision="highest"))
    s_BT = jnp.round(conv(a_BT.astype(jnp.float32), b_BT.astype(jnp.float32))[:, :T])

    def carry(c_B: jax.Array, s_B: jax.Array) -> tuple[jax.Array, jax.Array]:
        total_B = s_B + c_B
        return total_B // base, total_B % base

    _, digits_TB = jax.lax.scan(
        carry, jnp.zeros(s_BT.shape[:1], jnp.int32), s_BT.T.astype(jnp.int32)
    )
    return digits_TB.T


@dataclasses.dataclass(frozen=True)
class _ReversedArithmetic(Task, abc.ABC):
    """`a_0 .. a_n-1 OP b_0 .. b_n-1 SEP c_0 .. c_m-1`: two n-digit operands, least significant
    digit first, in base `alphabet`, and m(n) result digits; the machinery addition and
    multiplication share (layout, coupled positions, decoder and encoder forms). Vocabulary:
    digits 0..alphabet-1, PAD, SEP, BLANK, OP, then a subclass's own tokens, then END.

    `reversed_operands`: True (default) writes a and b least significant digit first, like the
    result; False writes them most significant digit first and only the result reversed (Cho et
    al.'s addition format, configs/task/addition_coupled.yaml: reverse_input False,
    reverse_output True). Hints and coupled positions follow each digit's significance either
    way. `end_token`: END after the result, scored like its digits (Cho et al.: `eos: True` in
    the same file); its coupled position is 0, like OP and SEP.
    """

    alphabet: int = 10
    reversed_operands: bool = True
    end_token: bool = False

    @property
    def operator(self) -> int:
        return self.alphabet + 3

    @property
    def own_tokens(self) -> int:
        """How many tokens a subclass adds after OP (addition's hints)."""
        return 0

    @property
    def end(self) -> int:
        """END, after the subclass's tokens (in the vocabulary only with end_token)."""
        return self.alphabet + 4 + self.own_tokens

    @property
    def vocab_size(self) -> int:
        return self.end + (1 if self.end_token else 0)

    @property
    def unit(self) -> int:
        """Tokens per digit (2 when a hint token precedes each digit)."""
        return 1

    def check(self) -> None:
        super().check()
        for name in ("reversed_operands", "end_token"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(
                    f"{self.name} {name} must be true or false, got {getattr(self, name)!r}."
                )

    @abc.abstractmethod
    def result_digits(self, n: Any) -> Any:
        """m(n): how many digits the result of two n-digit operands is written with."""

    @abc.abstractmethod
    def result(self, a_BT: jax.Array, b_BT: jax.Array) -> jax.Array:
        """The result's digits, least significant first, from the operands' ([B, T] each)."""

    def digit_tokens(
        self, key: jax.Array, digit_BT: jax.Array, k_BT: jax.Array, hint_BT: jax.Array
    ) -> jax.Array:
        """The token of each number position: its digit (a subclass may put hints there, drawn
        with `key` where they are random)."""
        return digit_BT

    def seq_len(self, length: int, causal: bool) -> int:
        total = (2 * length + self.result_digits(length)) * self.unit + 2 + int(self.end_token)
        return total - 1 if causal else total

    def layout(self, n_B1: jax.Array, T: int) -> dict[str, jax.Array]:
        """Where each token of [B, T] lies: operand a, b or result c, the significance k of its
        digit, whether it is a hint, and the index of OP, SEP, END (-1 without end_token) and
        the end of the sequence."""
        u = self.unit
        i_1T = jnp.arange(T, dtype=jnp.int32)[None, :]
        op_B1 = n_B1 * u
        sep_B1 = 2 * n_B1 * u + 1
        after_c_B1 = sep_B1 + 1 + self.result_digits(n_B1) * u  # one past the result's last token
        in_a = i_1T < op_B1
        in_b = (i_1T > op_B1) & (i_1T < sep_B1)
        in_c = (i_1T > sep_B1) & (i_1T < after_c_B1)
        r_BT = i_1T - jnp.where(in_a, 0, jnp.where(in_b, op_B1 + 1, sep_B1 + 1))
        k_BT = r_BT // u
        if not self.reversed_operands:  # a and b most significant digit first
            k_BT = jnp.where(in_a | in_b, n_B1 - 1 - k_BT, k_BT)
        return {
            "i": i_1T,
            "in_a": in_a,
            "in_b": in_b,
            "in_c": in_c,
            "k": k_BT,
            "hint": (r_BT % u == 0) & (u == 2),
            "op": op_B1,
            "sep": sep_B1,
            "end_token": after_c_B1 if self.end_token else jnp.full_like(after_c_B1, -1),
            "end": after_c_B1 + int(self.end_token),
        }

    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        B, T = n_B.shape[0], width + 1
        k_a, k_b = jax.random.split(key)
        n_B1 = n_B.astype(jnp.int32)[:, None]
        at = self.layout(n_B1, T)
        # Digit k of each operand at column k; columns >= n are 0, so the result's high columns
        # (a carry, a product's upper half) come out of the same digit arithmetic.
        in_n = jnp.arange(T, dtype=jnp.int32)[None, :] < n_B1
        a_BT = jnp.where(in_n, jax.random.randint(k_a, (B, T), 0, self.alphabet, jnp.int32), 0)
        b_BT = jnp.where(in_n, jax.random.randint(k_b, (B, T), 0, self.alphabet, jnp.int32), 0)
        c_BT = self.result(a_BT, b_BT)
        number = at["in_a"] | at["in_b"] | at["in_c"]
        k_BT = jnp.where(number, at["k"], 0)
        digit_BT = jnp.where(
            at["in_a"],
            gather_BL(a_BT, k_BT, number),
            jnp.where(at["in_b"], gather_BL(b_BT, k_BT, number), gather_BL(c_BT, k_BT, number)),
        )
        i = at["i"]
        is_end = i == at["end_token"]
        special = jnp.where(
            i == at["op"],
            self.operator,
            jnp.where(i == at["sep"], self.sep, jnp.where(is_end, self.end, self.pad)),
        )
        # Hints draw from a key of their own, so the digits drawn for every other option stay
        # as they were (and the frozen evaluation sets with them).
        digit_or_hint = self.digit_tokens(jax.random.fold_in(key, 1), digit_BT, k_BT, at["hint"])
        seq_BT = jnp.where(number, digit_or_hint, special).astype(jnp.int32)
        answer_BT = (at["in_c"] & ~at["hint"]) | is_end
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
class Addition(_ReversedArithmetic):
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
    (rows of the embedding table that training never updated), unless `hint_offset` > 0: each
    training sequence then starts its hints at a random h_o, o ~ U{0..hint_offset} (digit k
    gets h_{o+k}), so that training reaches the hints of longer numbers; evaluation
    (`held_out`) starts at h_0. Cho et al.'s code samples index hints so (HanseulJo/
    position-coupling, src/data/addition.py, AdditionDatasetWithIndexHints: a random start per
    example in training, a fixed one at evaluation); training needs n + 1 + hint_offset <= hints.
    `random_hint_start` instead draws each sequence's start anywhere the hints fit,
    o ~ U{0..hints - n - 1}, in training and at evaluation alike: Zhou et al.'s sampling
    ("randomly sample a consecutive index hints from a pre-defined ordered index set with 102
    distinct symbols", the same at test time; arXiv 2402.09371, Section 4.1 and Appendix B.1).

    `reversed_operands` and `end_token`: see the base (Cho et al.'s format).

    Coupled positions (Cho et al., 2024, arXiv 2405.20671, "Position Coupling"), given to the
    `coupled` position sampler in Batch.coords ([B, L, 1]): the digit of significance k of a, b
    and c, and its hint, sit at k + 1; PLUS and SEP at 0 (SEP is then the "digit -1" of the
    answer: in a decoder the token that predicts c_k always sits one coupled position below a_k
    and b_k); padding at 0. Our convention; what matters for the method, and what it keeps, is
    one position per significance. A position sampler that ignores coords numbers the tokens.
    """

    name = "addition"
    position_axes = 1
    index_hints: bool = False
    hints: int = 256
    hint_offset: int = 0
    random_hint_start: bool = False

    @property
    def plus(self) -> int:
        return self.operator

    def hint(self, k: Any) -> Any:
        """The hint token of significance k (of o + k with a hint offset o)."""
        return self.alphabet + 4 + k

    def digit_tokens(
        self, key: jax.Array, digit_BT: jax.Array, k_BT: jax.Array, hint_BT: jax.Array
    ) -> jax.Array:
        if self.random_hint_start:
            # The sum's carry digit has the row's largest significance, n: n + 1 hints.
            n_B1 = jnp.max(jnp.where(hint_BT, k_BT, 0), axis=1, keepdims=True)
            high_B1 = jnp.maximum(self.hints - n_B1, 1)
        else:
            high_B1 = jnp.full((digit_BT.shape[0], 1), self.hint_offset + 1, jnp.int32)
        o_B1 = jax.random.randint(key, high_B1.shape, 0, high_B1, jnp.int32)
        return jnp.where(hint_BT, self.hint(k_BT + o_B1), digit_BT)

    @property
    def own_tokens(self) -> int:
        return self.hints if self.index_hints else 0

    def held_out(self) -> Addition:
        # Evaluation (and the fit check) start every number's hints at h_0, unless the start is
        # drawn anywhere (random_hint_start), as in training.
        return dataclasses.replace(self, hint_offset=0)

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
        offset = self.hint_offset
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"addition hint_offset must be an integer >= 0, got {offset!r}.")
        if offset and not self.index_hints:
            raise ValueError(
                f"addition hint_offset={offset} shifts the index hints, but index_hints is off: "
                "set --index-hints, or drop --hint-offset."
            )
        if not isinstance(self.random_hint_start, bool):
            raise ValueError(
                f"addition random_hint_start must be true or false, got {self.random_hint_start!r}."
            )
        if self.random_hint_start and not self.index_hints:
            raise ValueError(
                "addition random_hint_start draws where the index hints start, but index_hints "
                "is off: set --index-hints, or drop --random-hint-start."
            )
        if self.random_hint_start and offset:
            raise ValueError(
                f"addition random_hint_start and hint_offset={offset} are two ways to draw where "
                "the hints start: keep one (random_hint_start draws it anywhere the hints fit, "
                "hint_offset up to a bound in training only)."
            )

    def check_lengths(self, train_length: int, eval_lengths: tuple[int, ...]) -> None:
        """Training draws hints up to h_{n + hint_offset}: they must exist."""
        need = train_length + 1 + self.hint_offset
        if self.index_hints and self.hint_offset and need > self.hints:
            raise ValueError(
                f"addition with hint_offset={self.hint_offset}: {train_length}-digit training "
                f"operands reach hint h_{need - 1}, but the hint alphabet has hints={self.hints} "
                f"tokens; raise hints to at least {need}, or lower hint_offset."
            )

    def seq_len(self, length: int, causal: bool) -> int:
        if self.index_hints and length + 1 > self.hints:
            raise ValueError(
                f"addition with index hints: {length}-digit operands have a {length + 1}-digit "
                f"sum, each digit with its own hint, but the hint alphabet has hints={self.hints}"
                f" tokens; raise hints to at least {length + 1} (the longest evaluated digit "
                "count + 1), or evaluate fewer digits."
            )
        return super().seq_len(length, causal)

    def result_digits(self, n: Any) -> Any:
        return n + 1

    def result(self, a_BT: jax.Array, b_BT: jax.Array) -> jax.Array:
        return add_reversed(a_BT, b_BT, self.alphabet)


@dataclasses.dataclass(frozen=True)
class Multiplication(_ReversedArithmetic):
    """Multiplication in reversed-digit format: `a_0 .. a_n-1 * b_0 .. b_n-1 SEP c_0 .. c_2n-1`.

    As addition (the same layout, TIMES in PLUS's place): two n-digit operands, least
    significant digit first, uniform digits in base `alphabet` (zero-padded operands), and
    their product written with 2n digits (the upper ones may be 0). A sequence has 4n + 2
    tokens; only the product's digits are scored. McLeish et al. (2024, arXiv 2405.17399,
    "Transformers Can Do Arithmetic with the Right Embeddings") train multiplication in this
    reversed format with Abacus embeddings (the `abacus` sampler with `learned`); they draw
    the two operands' lengths independently, here both have n digits.

    Coordinates (Batch.coords, [B, L, 1]) as addition's: digit k of a, b and c at k + 1, TIMES,
    SEP and padding at 0 (each digit's place in its number: Abacus's positions, and one
    position per significance for `coupled`). Products are computed digit by digit on device
    (`multiply_reversed`), so any length works.
    """

    name = "multiplication"
    position_axes = 1

    def result_digits(self, n: Any) -> Any:
        return 2 * n

    def result(self, a_BT: jax.Array, b_BT: jax.Array) -> jax.Array:
        return multiply_reversed(a_BT, b_BT, self.alphabet)
