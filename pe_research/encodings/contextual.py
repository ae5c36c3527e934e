"""Contextual encodings: positions computed from the content of the sequence (the `bias` hook)."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from pe_research.encodings.base import Dims, Encoding, Params, require_scaled_logits


def contextual_positions(gates_BHLM: jax.Array) -> jax.Array:
    """CoPE positions p_ij = sum_{k=j..i} g_ik over keys k <= i; zero for keys j > i.

    The causal triangle is taken by index, which is exact for causal self attention with padding
    after every real token (a real query never reaches a padding key). With every gate 1,
    p_ij = i - j + 1: the token count from key j to query i, both included.
    """
    L, M = gates_BHLM.shape[-2:]
    past_11LM = jnp.tril(jnp.ones((L, M), bool))[None, None]
    gates_BHLM = jnp.where(past_11LM, gates_BHLM, 0.0)
    return jnp.flip(jnp.cumsum(jnp.flip(gates_BHLM, axis=-1), axis=-1), axis=-1)


def interpolate_position_logits(logits_BHLP: jax.Array, pos_BHLM: jax.Array) -> jax.Array:
    """(p - floor p) z[ceil p] + (1 - (p - floor p)) z[floor p], z = q . e at integer positions.

    Interpolating the P logits q_i . e[n] is the same as taking q_i . e[p] with e interpolated,
    and costs P head-dim products per query instead of M (Golovneva et al., 2024).
    Positions must already lie in [0, P - 1]; a read outside the table is NaN, never clamped.
    """
    floor_BHLM = jnp.floor(pos_BHLM)
    frac_BHLM = pos_BHLM - floor_BHLM
    lo_BHLM, hi_BHLM = (
        jnp.take_along_axis(
            logits_BHLP, idx.astype(jnp.int32), axis=-1, mode="fill", fill_value=jnp.nan
        )
        for idx in (floor_BHLM, jnp.ceil(pos_BHLM))
    )
    return frac_BHLM * hi_BHLM + (1.0 - frac_BHLM) * lo_BHLM


@dataclasses.dataclass(frozen=True)
class CoPE(Encoding):
    """Contextual position encoding (Golovneva et al., 2024, "Contextual Position Encoding").

    Gates g_ij = sigmoid(q_i . k_j / sqrt(K)) decide which keys count; the contextual position
    of key j for query i is p_ij = sum_{k=j..i} g_ik, and the logit gains q_i . e[p_ij] / sqrt(K),
    with e linearly interpolated from a learned per-layer table of `npos_max` vectors of head
    dimension K, shared by the heads. Both the gates and the bias use the scaled dot product, as
    in the authors' reference code (its default, without `--cope-nodiv`); the table starts at
    zero, as there, unless `init_std` > 0.

    Positions are clamped to npos_max - 1, as the method prescribes: keys counted farther than
    that share the last vector. This clamp is part of CoPE, not a silent
    guard. CoPE ignores the integer positions given to the model (samplers have no effect) and
    is defined for causal decoders only.
    """

    name = "cope"
    learned = True
    npos_max: int = 64
    init_std: float = 0.0

    def check(self, dims: Dims, max_position: int) -> None:
        require_scaled_logits("cope", dims)
        if not dims.causal:
            raise ValueError(
                "cope sums gates over keys j..i of a causal decoder and is undefined for a "
                "bidirectional model (causal=False): use a causal model or another encoding."
            )
        if self.npos_max < 2:
            raise ValueError(
                f"cope npos_max must be >= 2 (position 0 and at least one count), "
                f"got {self.npos_max}."
            )
        if not self.init_std >= 0:
            raise ValueError(f"cope init_std must be >= 0, got {self.init_std}.")

    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        table_KP = self.init_std * jax.random.normal(key, (dims.head_dim, self.npos_max))
        return {"table_KP": table_KP}

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        scale = q_BLHK.shape[-1] ** -0.5
        q_BLHK = q_BLHK.astype(jnp.float32)
        qk_BHLM = jnp.einsum("BLHK,BMHK->BHLM", q_BLHK, k_BMHK.astype(jnp.float32))
        pos_BHLM = contextual_positions(jax.nn.sigmoid(qk_BHLM * scale))
        pos_BHLM = jnp.minimum(pos_BHLM, self.npos_max - 1)
        table_KP = params["table_KP"].astype(jnp.float32)
        logits_BHLP = jnp.einsum("BLHK,KP->BHLP", q_BLHK, table_KP)
        return interpolate_position_logits(logits_BHLP, pos_BHLM) * scale


def forgetting_bias(log_f_BHM: jax.Array, num_queries: int | None = None) -> jax.Array:
    """D_ij = -|c_i - c_j|, c_t = sum_{l <= t} log f_l over the keys' gates: for keys j <= i the
    sum of log f_l over l = j+1..i (Lin et al., 2025), for keys j > i the sum over l = i+1..j.

    c is non-increasing (every log f <= 0), so for j <= i -|c_i - c_j| is exactly c_i - c_j, the
    paper's causal bias; the mirrored half serves bidirectional models. Queries are the first
    `num_queries` tokens of the key sequence (default all: self attention), as in CoPE.
    """
    c_BHM = jnp.cumsum(log_f_BHM.astype(jnp.float32), axis=-1)
    c_BHL = c_BHM[..., : c_BHM.shape[-1] if num_queries is None else num_queries]
    return -jnp.abs(c_BHL[..., :, None] - c_BHM[..., None, :])


@dataclasses.dataclass(frozen=True)
class ForgettingGate(Encoding):
    """Forgetting Attention (Lin et al., 2025, "Forgetting Transformer: Softmax Attention with a
    Forget Gate", arXiv 2503.02130): logits gain sum_{l=j+1..i} log f_l, a decay that the content
    decides, and no other positional encoding.

    Per head, f_t = sigmoid(w_h . k_t + b_h) with k_t the head's key. The paper computes the gate
    from the layer input, sigmoid(w_h . x_t + b_h) with w_h in R^D; the bias hook sees q and k,
    not x, and k_t = W_k x_t, so here w_h . k_t = (W_k^T w_h) . x_t is the paper's gate with
    w_h restricted to the K-dimensional span of the head's key projection (which it shares with
    the keys). Init: w = 0 and b = `init_bias`, so every gate starts at sigmoid(init_bias)
    (0.9933 at the default 5: a decay of 0.0067 per token, ALiBi-like with that slope, until the
    gates learn to depend on content). With every gate 1 the bias is 0 and the model is NoPE.

    The integer positions given to the model are ignored (samplers have no effect): the decay
    runs over the order of the tokens, with padding after every real token. In a bidirectional
    model (causal=False) a key j after query i decays by the gates l = i+1..j (`forgetting_bias`),
    an extension of ours: the paper defines causal models only.
    """

    name = "forgetting"
    learned = True
    init_bias: float = 5.0

    def check(self, dims: Dims, max_position: int) -> None:
        if not math.isfinite(self.init_bias):
            raise ValueError(
                f"forgetting init_bias must be a finite number, got {self.init_bias}: gates "
                "start at sigmoid(init_bias), for example 5.0 (0.9933)."
            )

    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        return {
            "w_HK": jnp.zeros((dims.num_heads, dims.head_dim)),
            "b_H": jnp.full((dims.num_heads,), self.init_bias),
        }

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        gate_BHM = jnp.einsum("BMHK,HK->BHM", k_BMHK.astype(jnp.float32), params["w_HK"])
        log_f_BHM = jax.nn.log_sigmoid(gate_BHM + params["b_H"][None, :, None])
        L, M = q_BLHK.shape[1], k_BMHK.shape[1]
        if L > M:
            raise ValueError(
                f"forgetting takes queries among the keys' tokens: got {L} queries for {M} keys; "
                "call it with at most as many queries as keys (self attention has equal counts)."
            )
        return forgetting_bias(log_f_BHM, L)
