"""Tasks of the contextual-position papers: flip-flop (Liu et al., 2023), selective copy (Gu and
Dao, 2023) and counting (Golovneva et al., 2024), where positions must count chosen tokens, and
local count (Vasylenko et al., 2025), where they must count back to the last change of symbol."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from pe_research.tasks.base import Batch, PromptAnswer, Task, gather_BL, last_index


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
        last_write_BS = last_index(op_BS == self.write)  # >= 0: instruction 0 writes
        is_read_BS = op_BS == self.read
        x_BS = jnp.where(is_read_BS, gather_BL(x_BS, last_write_BS, is_read_BS), x_BS)
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
class SelectiveCopy(PromptAnswer):
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
        return gather_BL(x_BT, j_BT, in_answer_BT)

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
        return jnp.where(symbol_BT, gather_BL(x_BT, index_BT, symbol_BT), self.noise)


@dataclasses.dataclass(frozen=True)
class Counting(PromptAnswer):
    """Counting: `q x_1 .. x_n SEP d_1 .. d_D`, the number of x_i equal to the query symbol q,
    written in D = `count_digits` decimal digits, most significant first, zero padded.

    The model must count the occurrences of the symbol named first, anywhere among n uniform
    symbols. The task's length n is the number of symbols after q; counts reach n, so
    n <= 10^D - 1 or the run is refused. Only the D digits are scored. Vocabulary: the alphabet,
    PAD, SEP, BLANK, then the digits 0-9.

    This is not the counting task of Golovneva et al. (2024, arXiv 2405.18719, CoPE), though it
    asks the same of positions: count chosen tokens, not all of them. Theirs
    (facebookresearch/RAM, projects/cope/scripts/count_data_gen.py and run.sh) is a program
    trace: 3 to 512 statements drawn with weights 1 : 50 : 7 from `v = 0 ;`, `pass;` and `v ++;`
    over the first k letters as variables (k = 3 or 5 in run.sh), then `print v`, answered by
    v's value (at most 10) as one token; 10,000 training samples, a 4-layer model of width 256
    trained for 100 epochs. Here the query names a symbol, every occurrence counts, the count is
    written in digits and can reach n, and the lengths are whatever a run trains and evaluates
    on. No number from one applies to the other.
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


@dataclasses.dataclass(frozen=True)
class LocalCount(Task):
    """Local count: over a stream of runs of repeated symbols, the target at each token is how many
    copies of its symbol came before it in its run (0, 1, 2, ...).

    The local count task of the ASEntmax paper's suite (Vasylenko et al., 2025, arXiv 2506.16640;
    deep-spin/asentmax, scripts/generate_data.py, LocalCount): runs of r copies of a symbol, r
    uniform in 2..`max_reps`, consecutive runs of different symbols, and a label at every token. The
    task's length n is the number of stream tokens; the last run may be cut short. Their data use 16
    symbols, runs of up to 48 and whole runs, length // 25 of them at nominal training lengths
    64-128 (README and scripts/generate_data.py), so 2-5 runs and about 50-125 tokens; here the
    defaults are 16 symbols and runs of up to 8 (a few runs at the training lengths of 16). Every
    symbol is scored, in decoders and encoders alike (the labels are not next tokens: a labelling
    task like `offset`, and a causal model can solve it since a label depends on the tokens up to
    its own).

    `bos_eos` (default True): the stream stands between a start and an end token, neither scored, as
    in the paper's input pattern `{bos_token} {text} {eos_token}` with target `{no_loss} {text}
    {no_loss}` (deep-spin/asentmax, synthetic/configs/data/local_count.yaml); SEP is the start, END
    the end. Without them the first run has no token before it, and its counts are absolute
    positions, which most encodings then fail to learn on the leaderboard's recipe.
    Vocabulary: the alphabet, PAD, SEP, BLANK (unused), the counts 0..max_reps-1, END.
    """

    name = "local_count"
    max_reps: int = 8
    bos_eos: bool = True

    def count_token(self, c: Any) -> Any:
        return self.alphabet + 3 + c

    @property
    def end(self) -> int:
        return self.alphabet + 3 + self.max_reps

    @property
    def vocab_size(self) -> int:
        return self.end + 1

    def check(self) -> None:
        super().check()
        value = self.max_reps
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise ValueError(
                f"local_count max_reps must be an integer >= 2 (runs have 2..max_reps copies), "
                f"got {value!r}."
            )
        if not isinstance(self.bos_eos, bool):
            raise ValueError(f"local_count bos_eos must be true or false, got {self.bos_eos!r}.")

    def seq_len(self, length: int, causal: bool) -> int:
        return length + (2 if self.bos_eos else 0)

    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        if not self.bos_eos:
            return self._stream(key, n_B, width)
        # The stream as without the markers (the same runs when the width is seq_len), one place
        # right, after SEP (the start), and END after it.
        bare = self._stream(key, n_B, width - 2)
        B = n_B.shape[0]

        def place(x_BT: jax.Array, first: Any, after: Any) -> jax.Array:
            """x one place right, `first` before it and `after` in the last column."""
            before_B1, after_B1 = (jnp.full((B, 1), v, x_BT.dtype) for v in (first, after))
            return jnp.concatenate([before_B1, x_BT, after_B1], axis=1)

        i_1T = jnp.arange(width, dtype=jnp.int32)[None, :]
        n_B1 = n_B.astype(jnp.int32)[:, None]
        return Batch(
            inputs=jnp.where(i_1T == n_B1 + 1, self.end, place(bare.inputs, self.sep, self.pad)),
            targets=place(bare.targets, self.pad, self.pad),
            loss_mask=place(bare.loss_mask, False, False),
            valid=i_1T < n_B1 + 2,
        )

    def _stream(self, key: jax.Array, n_B: jax.Array, width: int) -> Batch:
        """n_B symbols of runs, each labelled with its count in its run, padded to `width`."""
        B, T = n_B.shape[0], width
        k_rep, k_first, k_step = jax.random.split(key, 3)
        S = T // 2 + 1  # runs of >= 2 tokens that can start within T tokens
        reps_BS = jax.random.randint(k_rep, (B, S), 2, self.max_reps + 1, dtype=jnp.int32)
        start_BS = jnp.cumsum(reps_BS, axis=1) - reps_BS
        # A run's symbol differs from the previous run's: add 1..A-1 modulo A.
        first_B1 = jax.random.randint(k_first, (B, 1), 0, self.alphabet, dtype=jnp.int32)
        step_BS = jax.random.randint(k_step, (B, S), 1, self.alphabet, dtype=jnp.int32)
        symbol_BS = (first_B1 + jnp.cumsum(step_BS, axis=1) - step_BS) % self.alphabet
        # Mark run starts in one extra column that every start beyond the width lands in.
        rows_B1 = jnp.arange(B)[:, None]
        start_BT = jnp.zeros((B, T + 1), bool).at[rows_B1, jnp.minimum(start_BS, T)].set(True)
        start_BT = start_BT[:, :T]
        run_BT = jnp.cumsum(start_BT, axis=1, dtype=jnp.int32) - 1
        i_1T = jnp.arange(T, dtype=jnp.int32)[None, :]
        count_BT = i_1T - last_index(start_BT)
        real_BT = i_1T < n_B.astype(jnp.int32)[:, None]
        return Batch(
            inputs=jnp.where(real_BT, gather_BL(symbol_BS, run_BT, real_BT), self.pad),
            targets=jnp.where(real_BT, self.count_token(count_BT), self.pad).astype(jnp.int32),
            loss_mask=real_BT,
            valid=real_BT,
        )
