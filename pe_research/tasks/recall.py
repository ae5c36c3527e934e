"""Recall by content: multi-query associative recall (Arora et al., 2023, Zoology)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from pe_research.tasks.base import Batch, Task, gather_BL


def permutation_prefix(key: jax.Array, batch: int, size: int, width: int) -> jax.Array:
    """[batch, width] int32: each row a uniform random permutation of range(size), cut or
    zero-padded to `width`: its first n entries are a uniform ordered n-subset for n <= size."""
    B = batch
    # The `size` values ranked by i.i.d. scores.
    perm_BS = jnp.argsort(jax.random.uniform(key, (B, size)), axis=1).astype(jnp.int32)
    if size >= width:
        return perm_BS[:, :width]
    return jnp.pad(perm_BS, ((0, 0), (0, width - size)))


@dataclasses.dataclass(frozen=True)
class MQAR(Task):
    """Multi-query associative recall: `k_1 v_1 .. k_n v_n SEP q_1 v(q_1) .. q_n v(q_n)`.

    n key-value pairs, then every key once more as a query, in a random order, each followed by
    its value (Arora et al., 2023, arXiv 2312.04927, "Zoology": MQAR, the recall that separates
    attention from gated convolutions; the multi-query multi-token recall of the ASEntmax
    paper's suite, deep-spin/asentmax, has keys and values of 2 tokens and spaces between the
    pairs, and 4 queries). The task's length n is the number of pairs. Keys are distinct,
    drawn from `keys` key tokens, so n <= keys or the run is refused; values are uniform over
    the alphabet. Only the recalled values are scored (an encoder sees BLANK there): the answer
    depends on which key a query names, not on where it stands. A sequence has 4n + 1 tokens.
    Vocabulary: values 0..alphabet-1, PAD, SEP, BLANK, then the keys.

    Not Zoology's data (HazyResearch/zoology, zoology/data/multiquery_ar.py), which this form
    simplifies for length generalization: there keys and values come from the two halves of the
    vocabulary (8,192 tokens in the configs of their Figure 2,
    zoology/experiments/paper_configs/arxiv24_based_figure2/configs.py) and the values of a
    sequence are distinct (here values come from the 16 symbols and may repeat), with no SEP; a
    sequence has a fixed length (training 4-64 pairs in 64-256 tokens, tests up to 256 pairs in
    1,024), and after the pairs every key is queried once at a gap drawn from a power law
    (power_a 0.01) among random filler tokens, its value never shown after it. Here the queries
    follow one another, so the task's length n sets both the pairs and the sequence.
    """

    name = "mqar"
    keys: int = 256

    def key_token(self, k: jax.Array) -> jax.Array:
        return self.alphabet + 3 + k

    @property
    def vocab_size(self) -> int:
        return self.alphabet + 3 + self.keys

    def check(self) -> None:
        super().check()
        if isinstance(self.keys, bool) or not isinstance(self.keys, int) or self.keys < 1:
            raise ValueError(f"mqar keys must be an integer >= 1, got {self.keys!r}.")

    def seq_len(self, length: int, causal: bool) -> int:
        if length > self.keys:
            raise ValueError(
                f"mqar: {length} pairs need {length} distinct keys, but there are keys="
                f"{self.keys} key tokens; raise keys to at least {length} (the longest "
                "evaluated length)."
            )
        return 4 * length + (0 if causal else 1)

    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        B, T = n_B.shape[0], width + 1
        k_key, k_val, k_order = jax.random.split(key, 3)
        n_B1 = n_B.astype(jnp.int32)[:, None]
        P = T // 2 + 1  # pairs that can start within T tokens
        key_BP = permutation_prefix(k_key, B, self.keys, P)
        value_BP = jax.random.randint(k_val, (B, P), 0, self.alphabet, dtype=jnp.int32)
        # The query order: a uniform permutation of the n pairs (scores beyond n sort last).
        p_1P = jnp.arange(P, dtype=jnp.int32)[None, :]
        score_BP = jnp.where(p_1P < n_B1, jax.random.uniform(k_order, (B, P)), 2.0)
        order_BP = jnp.argsort(score_BP, axis=1).astype(jnp.int32)

        i_1T = jnp.arange(T, dtype=jnp.int32)[None, :]
        in_pairs = i_1T < 2 * n_B1
        r_BT = i_1T - 2 * n_B1 - 1  # index within the queries
        in_queries = (r_BT >= 0) & (r_BT < 2 * n_B1)
        queried_BT = gather_BL(order_BP, r_BT // 2, in_queries)
        pair_BT = jnp.where(in_pairs, i_1T // 2, queried_BT)
        real = in_pairs | in_queries
        is_key = jnp.where(in_pairs, i_1T % 2 == 0, r_BT % 2 == 0)
        token_BT = jnp.where(
            is_key,
            self.key_token(gather_BL(key_BP, pair_BT, real)),
            gather_BL(value_BP, pair_BT, real),
        )
        seq_BT = jnp.where(real, token_BT, jnp.where(i_1T == 2 * n_B1, self.sep, self.pad))
        seq_BT = seq_BT.astype(jnp.int32)
        answer_BT = in_queries & ~is_key
        i_1L = i_1T[:, :width]
        if causal:
            return Batch(
                inputs=seq_BT[:, :width],
                targets=seq_BT[:, 1:],
                loss_mask=answer_BT[:, 1:],
                valid=jnp.broadcast_to(i_1L < 4 * n_B1, (B, width)),
            )
        return Batch(
            inputs=jnp.where(answer_BT[:, :width], self.blank, seq_BT[:, :width]),
            targets=seq_BT[:, :width],
            loss_mask=answer_BT[:, :width],
            valid=jnp.broadcast_to(i_1L <= 4 * n_B1, (B, width)),
        )
