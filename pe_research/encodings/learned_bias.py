"""Relative encodings whose bias is a learned function: FIRE's MLP over normalized distance, and
Transformer-XL's projected sinusoidal relative embeddings (both use the `bias` hook)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from pe_research.encodings.absolute import sinusoidal_table
from pe_research.encodings.base import (
    Dims,
    Encoding,
    Params,
    check_even,
    check_positive,
    require_scaled_logits,
)
from pe_research.encodings.bias import heads_first, relative_distance_BLM

# -- FIRE ----------------------------------------------------------------------------------------


def fire_normalized_distance(
    qpos_BL: jax.Array,
    kpos_BM: jax.Array,
    *,
    c: jax.Array | float,
    threshold: jax.Array | float,
    eps: float = 1e-6,
) -> jax.Array:
    """FIRE's input (Li et al., 2023): psi(|i - j|) / psi(max(threshold, i)), float32 x_BLM.

    psi(x) = log(|c| x + 1); i is the query position, j the key position. The normalizer uses
    the query position only, so no bias depends on later positions or the sequence length.
    """
    c = jnp.abs(jnp.asarray(c, jnp.float32))
    i_BL = qpos_BL.astype(jnp.float32)
    dist_BLM = jnp.abs(relative_distance_BLM(qpos_BL, kpos_BM))
    normalizer_BL = jnp.log1p(c * jnp.maximum(i_BL, jnp.asarray(threshold, jnp.float32))) + eps
    return jnp.log1p(c * dist_BLM) / normalizer_BL[:, :, None]


@dataclasses.dataclass(frozen=True)
class FIRE(Encoding):
    """Functional interpolation for relative positions (Li et al., 2023), per layer:

    bias_h(i, j) = f_theta(psi(i - j) / psi(max(L, i)))_h,  psi(x) = log(c x + 1),

    f_theta an MLP 1 -> `hidden` (ReLU) -> heads. As in the paper's code, c enters as |c|
    (init 0.1) and the threshold as L = |s| * init_threshold with s learned (init 1, L = 512).
    The paper is causal (i >= j); we use |i - j|, which is the same under a causal mask and the
    symmetric variant without one. Translation invariant while every query position is below L;
    beyond, the normalizer grows with the query position (progressive interpolation).

    `shared`: False (our default): each layer learns its own f_theta, c and L. True: one set,
    made by `init_embed` and read by every layer's bias hook, as Zhou et al. (2024, arXiv
    2402.09371, Appendix B.2: "layerwise sharing of attention bias across all attention
    blocks") ran FIRE.
    """

    name = "fire"
    learned = True
    hidden: int = 32
    init_c: float = 0.1
    init_threshold: float = 512.0
    eps: float = 1e-6
    shared: bool = False

    def check(self, dims: Dims, max_position: int) -> None:
        check_positive("fire hidden", self.hidden)
        check_positive("fire init_c", self.init_c)
        check_positive("fire init_threshold", self.init_threshold)
        if not isinstance(self.shared, bool):
            raise ValueError(f"fire shared must be true or false, got {self.shared!r}.")

    def init_embed(self, key: jax.Array, dims: Dims) -> Params:
        return self._mlp(key, dims) if self.shared else {}

    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        return {} if self.shared else self._mlp(key, dims)

    def _mlp(self, key: jax.Array, dims: Dims) -> Params:
        k1, k2, k3, k4 = jax.random.split(key, 4)
        F, H = self.hidden, dims.num_heads

        def uniform(k: jax.Array, shape: tuple[int, ...], fan_in: int) -> jax.Array:
            return jax.random.uniform(k, shape, minval=-1.0, maxval=1.0) * fan_in**-0.5

        # The default init of a torch Linear layer, as in the paper's code.
        return {
            "w_in_F": uniform(k1, (F,), 1),
            "b_in_F": uniform(k2, (F,), 1),
            "w_out_FH": uniform(k3, (F, H), F),
            "b_out_H": uniform(k4, (H,), F),
            "c": jnp.asarray(self.init_c, jnp.float32),
            "threshold_scale": jnp.ones((), jnp.float32),
        }

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        p = {name: value.astype(jnp.float32) for name, value in params.items()}
        threshold = jnp.abs(p["threshold_scale"]) * self.init_threshold
        x_BLM = fire_normalized_distance(
            qpos_BL, kpos_BM, c=p["c"], threshold=threshold, eps=self.eps
        )
        w_in_111F, b_in_111F = p["w_in_F"][None, None, None], p["b_in_F"][None, None, None]
        h_BLMF = jax.nn.relu(x_BLM[..., None] * w_in_111F + b_in_111F)
        bias_BLMH = jnp.einsum("BLMF,FH->BLMH", h_BLMF, p["w_out_FH"])
        return heads_first(bias_BLMH + p["b_out_H"][None, None, None])


# -- Transformer-XL ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TransformerXL(Encoding):
    """Relative attention of Transformer-XL (Dai et al., 2019) without the segment memory.

    The score of query i and key j is (q_i.k_j + (q_i + v).W_R R_{i-j} + u.k_j) / sqrt(head_dim):
    the model supplies q.k / sqrt(head_dim), this bias the rest, scaled the same way, as in the
    paper's code. R_o = [sin(o w), cos(o w)] (sines first, as in the paper's code) with
    w = base^(-2f/R), R = `rel_width` (default d_model); W_R (w_RHK), u (u_HK), v (v_HK) are
    learned per layer. Since sin and cos of a difference expand into products of sin and cos of
    each position, the relative term is two matmuls over positions measured from each row's first
    query: exact for any integer positions, no [L, M, R] tensor and no gather.
    """

    name = "transformer_xl"
    learned = True
    rel_width: int | None = None
    base: float = 10000.0
    init_std: float = 0.02

    def width(self, dims: Dims) -> int:
        return dims.d_model if self.rel_width is None else self.rel_width

    def check(self, dims: Dims, max_position: int) -> None:
        require_scaled_logits("transformer_xl", dims)
        check_positive("transformer_xl base", self.base)
        check_positive("transformer_xl rel_width", self.width(dims))
        check_even(
            "transformer_xl rel_width", self.width(dims), "each frequency is a sin, cos pair."
        )

    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        k_w, k_u, k_v = jax.random.split(key, 3)
        R, H, K = self.width(dims), dims.num_heads, dims.head_dim
        return {
            "w_RHK": jax.random.normal(k_w, (R, H, K)) * R**-0.5,
            "u_HK": jax.random.normal(k_u, (H, K)) * self.init_std,
            "v_HK": jax.random.normal(k_v, (H, K)) * self.init_std,
        }

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        w_RHK = params["w_RHK"].astype(jnp.float32)
        u_HK = params["u_HK"].astype(jnp.float32)
        v_HK = params["v_HK"].astype(jnp.float32)
        q_BLHK32, k_BMHK32 = q_BLHK.astype(jnp.float32), k_BMHK.astype(jnp.float32)
        (B, L, _, K), M, R = q_BLHK.shape, k_BMHK.shape[1], w_RHK.shape[0]
        F = R // 2
        # Only differences matter; a shared origin keeps angles small and the bias exactly
        # translation invariant.
        origin_B1 = qpos_BL[:, :1].astype(jnp.int32)
        qrel_L = (qpos_BL.astype(jnp.int32) - origin_B1).reshape(-1)
        krel_M = (kpos_BM.astype(jnp.int32) - origin_B1).reshape(-1)
        sc_q = sinusoidal_table(qrel_L, R, base=self.base, layout="halves").reshape(B, L, R)
        sc_k = sinusoidal_table(krel_M, R, base=self.base, layout="halves").reshape(B, M, R)
        sin_q, cos_q = sc_q[..., None, :F], sc_q[..., None, F:]
        sin_k, cos_k = sc_k[..., :F], sc_k[..., F:]
        a_BLHR = jnp.einsum("BLHK,RHK->BLHR", q_BLHK32 + v_HK[None, None], w_RHK)
        a_sin, a_cos = a_BLHR[..., :F], a_BLHR[..., F:]
        # sum_f a_sin sin(x - y) + a_cos cos(x - y), expanded in sin/cos of x and of y.
        with_cos_k = a_sin * sin_q + a_cos * cos_q
        with_sin_k = a_cos * sin_q - a_sin * cos_q
        position_BHLM = jnp.einsum(
            "BLHG,BMG->BHLM",
            jnp.concatenate([with_cos_k, with_sin_k], axis=-1),
            jnp.concatenate([cos_k, sin_k], axis=-1),
        )
        content_BHM = jnp.einsum("HK,BMHK->BHM", u_HK, k_BMHK32)
        return (position_BHLM + content_BHM[:, :, None, :]) * K**-0.5
