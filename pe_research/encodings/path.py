"""PaTH attention: the q-k transform is the product of data-dependent Householder-like matrices
of the tokens between the two positions (Yang et al., 2025, arXiv 2505.16381, "PaTH Attention:
Position Encoding via Accumulating Householder Transformations").

    logit(i, j) = q_i^T H_i H_(i-1) ... H_(j+1) k_j  (j <= i; j = i: q_i.k_i),
    H_t = I - beta_t w_t w_t^T,  w_t a unit vector, beta_t = 2 sigmoid(.) in (0, 2)

RoPE's transform between two positions is a fixed rotation of their distance; PaTH's is
accumulated from what the tokens in between say, so it can count, skip or undo. Eigenvalues of
H_t lie in [-1, 1] (beta > 1 gives negative ones, which the reference allows on purpose).

Reference: fla-org/flash-linear-attention, fla/layers/path_attn.py (the layer) and
fla/ops/path_attn/naive.py (the computation). As there, the logits come from the UT transform in
chunks of CHUNK tokens: within a chunk, the product of its Householders is I - W^T T (beta W)
with T = (I + strictly_lower(beta W W^T))^-1 (a unit-triangular inverse, `unit_lower_inverse`); a
query is carried back across earlier chunks by their products (a scan over chunks). Chunks keep
T's growth bounded in float32.

What w_t and beta_t read. The reference computes w_t = l2norm(silu(shortconv(W_w x_t))) (a
causal depthwise convolution of width 3 over the tokens) and beta_t = 2 sigmoid(W_beta x_t + b)
from the layer input x. The bias hook sees q and k, so here they read the head's key, as the
forgetting gate does: w_t = l2norm(silu(shortconv(A_h k_t))), beta_t = 2 sigmoid(u_h . k_t +
b_h), A_h, u_h, b_h and the convolution's taps learned per layer and head: the reference's maps
limited to the key projection's span. The optional forget gate of the reference (PaTH-FoX) is
left out (see `forgetting`). Causal models only, as in the paper; positions are not read (the
transform runs over token order), so any sampler works.

The hook returns scale * (PaTH's logit - q.k), which the model adds to its scale * q.k.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from pe_research.encodings.base import Dims, Encoding, Params, require_scaled_logits

CHUNK = 16


def unit_lower_inverse(a_XCC: jax.Array) -> jax.Array:
    """(I + A)^-1 for strictly lower triangular C x C matrices A, by block doubling.

    The inverse of [[L11, 0], [A21, L22]] is [[T11, 0], [-T22 A21 T11, T22]] with T11, T22 the
    inverses of the diagonal blocks: from 1 x 1 blocks (T = 1), log2(C) levels of batched
    products build the whole inverse. The products are of T's and A's entries, never of powers
    of A, which a repeated token (beta > 1, parallel w) grows to 1e5 while T stays small, so
    that a power series (I - A)(I + A^2)(I + A^4)... cancels in float32; block inversion is as
    accurate as substitution (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed.,
    sec. 14.2.2). Products only, no triangular solve: XLA's CPU runtime deadlocked on one inside
    the training step.
    """
    C = a_XCC.shape[-1]
    P = 1 << max(C - 1, 0).bit_length()  # C padded to a power of two; the padding's inverse is I
    batch = a_XCC.shape[:-2]
    a_XPP = jnp.pad(a_XCC, [(0, 0)] * len(batch) + [(0, P - C), (0, P - C)])
    t_XNbb = jnp.ones((*batch, P, 1, 1), a_XCC.dtype)  # inverses of the N = P / b diagonal blocks
    b = 1
    while b < P:
        n = P // (2 * b)
        pairs = a_XPP.reshape(*batch, n, 2 * b, n, 2 * b)
        diagonal_XnBB = jnp.moveaxis(jnp.diagonal(pairs, axis1=-4, axis2=-2), -1, -3)
        t11, t22 = t_XNbb[..., 0::2, :, :], t_XNbb[..., 1::2, :, :]
        t21 = -(t22 @ diagonal_XnBB[..., b:, :b]) @ t11
        top = jnp.concatenate([t11, jnp.zeros_like(t11)], -1)
        t_XNbb = jnp.concatenate([top, jnp.concatenate([t21, t22], -1)], -2)
        b *= 2
    return t_XNbb.reshape(*batch, P, P)[..., :C, :C]


def householder_logits(
    q_BHLK: jax.Array, k_BHLK: jax.Array, w_BHLK: jax.Array, beta_BHL: jax.Array
) -> jax.Array:
    """logit_BHLL[i, j] = q_i^T H_i ... H_(j+1) k_j for j <= i, 0 above the diagonal, with
    H_t = I - beta_t w_t w_t^T; in the dtype of the inputs (float32 or float64)."""
    B, H, L, K = q_BHLK.shape
    C = min(CHUNK, L)
    N = math.ceil(L / C)
    pad = ((0, 0), (0, 0), (0, N * C - L), (0, 0))

    def chunks(x: jax.Array) -> jax.Array:  # [B, H, N, C, ...]; padding turns by H = I
        x = jnp.pad(x, pad[: x.ndim])
        return x.reshape(B, H, N, C, *x.shape[3:])

    q, k, w, beta = chunks(q_BHLK), chunks(k_BHLK), chunks(w_BHLK), chunks(beta_BHL)
    bw_BHNCK = beta[..., None] * w
    strict_111CC = jnp.tril(jnp.ones((C, C), bool), k=-1)[None, None, None]
    lower_111CC = jnp.tril(jnp.ones((C, C), bool))[None, None, None]

    def mm(a: jax.Array, b: jax.Array) -> jax.Array:  # a @ b^T over the last axes
        return jnp.einsum("...ck,...dk->...cd", a, b)

    # T = (I + strictly_lower(beta W W^T))^-1: unit lower triangular.
    t_BHNCC = unit_lower_inverse(jnp.where(strict_111CC, mm(bw_BHNCK, w), 0.0))
    # [a, j] = beta_a w_a . k_j for a > j: the Householders after key j, within the chunk.
    twbk = t_BHNCC @ jnp.where(strict_111CC, mm(bw_BHNCK, k), 0.0)
    qw = jnp.where(lower_111CC, mm(q, w), 0.0)  # [i, a] = q_i . w_a for a <= i
    local_BHNCC = jnp.where(lower_111CC, mm(q, k), 0.0) - qw @ twbk
    tbw_BHNCK = t_BHNCC @ bw_BHNCK
    q_back = q - qw @ tbw_BHNCK  # q_i^T times the chunk's Householders from i down to its start
    k_fwd = k - jnp.swapaxes(twbk, -1, -2) @ w  # k_j times those from the chunk's end down to j+1
    # The whole chunk's product, acting on a row vector: q^T (I - W^T T beta W).
    prod_BHNKK = jnp.eye(K, dtype=q.dtype)[None, None, None] - jnp.swapaxes(w, -1, -2) @ tbw_BHNCK

    n_N = jnp.arange(N)

    def back_one_chunk(u_BHNCK, xs):
        m, k_m, prod_m = xs  # key chunk m, its keys and product
        block_BHNCC = mm(u_BHNCK, k_m[:, :, None])
        later_11N11 = (n_N > m)[None, None, :, None, None]
        u_BHNCK = jnp.where(later_11N11, u_BHNCK @ prod_m[:, :, None], u_BHNCK)
        return u_BHNCK, block_BHNCC

    xs = (n_N, jnp.moveaxis(k_fwd, 2, 0), jnp.moveaxis(prod_BHNKK, 2, 0))
    _, blocks_MBHNCC = jax.lax.scan(back_one_chunk, q_back, xs, reverse=True)
    # blocks[m, b, h, n, c, d]: query chunk n, key chunk m; kept where n > m.
    inter_BHNCMD = jnp.transpose(blocks_MBHNCC, (1, 2, 3, 4, 0, 5))
    n_11N111 = n_N[None, None, :, None, None, None]
    m_1111M1 = n_N[None, None, None, None, :, None]
    full = jnp.where(
        n_11N111 > m_1111M1,
        inter_BHNCMD,
        jnp.where(n_11N111 == m_1111M1, local_BHNCC[:, :, :, :, None, :], 0.0),
    )
    return full.reshape(B, H, N * C, N * C)[:, :, :L, :L]


@dataclasses.dataclass(frozen=True)
class PaTH(Encoding):
    """PaTH attention (Yang et al., 2025): Householder products between positions, w and beta
    read from the key (module docstring); causal only; the bias hook."""

    name = "path"
    learned = True
    conv_size: int = 3

    def check(self, dims: Dims, max_position: int) -> None:
        require_scaled_logits("path", dims)
        c = self.conv_size
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise ValueError(
                f"path conv_size must be an integer >= 1 (the short convolution over tokens "
                f"that makes w; the reference uses 3), got {c!r}."
            )
        if not dims.causal:
            raise ValueError(
                "path multiplies the Householders of the tokens between a query and an earlier "
                "key and is defined for causal models only: drop --model.causal False, or use "
                "another encoding."
            )

    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        self.check(dims, 0)
        H, K, S = dims.num_heads, dims.head_dim, self.conv_size
        k_proj, k_conv, k_beta = jax.random.split(key, 3)
        return {
            "w_proj_HKE": jax.random.normal(k_proj, (H, K, K)) * K**-0.5,
            "w_conv_SHK": jax.random.normal(k_conv, (S, H, K)) * S**-0.5,
            "beta_proj_HK": jax.random.normal(k_beta, (H, K)) * K**-0.5,
            "beta_bias_H": jnp.zeros((H,)),
        }

    def householders(self, params: Params, k_BMHK: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(w_BHMK unit vectors, beta_BHM in (0, 2)) of every token, read from its key."""
        p = {name: value.astype(jnp.float32) for name, value in params.items()}
        k = k_BMHK.astype(jnp.float32)
        pre_BMHK = jnp.einsum("BMHE,HKE->BMHK", k, p["w_proj_HKE"])
        S, M = self.conv_size, k.shape[1]
        # Causal depthwise convolution over the tokens: tap s reads the token s steps back.
        padded = jnp.pad(pre_BMHK, ((0, 0), (S - 1, 0), (0, 0), (0, 0)))
        conv_BMHK = sum(
            padded[:, S - 1 - s : S - 1 - s + M] * p["w_conv_SHK"][s][None, None] for s in range(S)
        )
        w_BMHK = jax.nn.silu(conv_BMHK)
        w_BMHK = w_BMHK * jax.lax.rsqrt(jnp.sum(w_BMHK * w_BMHK, -1, keepdims=True) + 1e-12)
        beta_BMH = 2.0 * jax.nn.sigmoid(
            jnp.einsum("BMHK,HK->BMH", k, p["beta_proj_HK"]) + p["beta_bias_H"][None, None]
        )
        return jnp.swapaxes(w_BMHK, 1, 2), jnp.swapaxes(beta_BMH, 1, 2)

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        w_BHMK, beta_BHM = self.householders(params, k_BMHK)
        q_BHLK = jnp.swapaxes(q_BLHK.astype(jnp.float32), 1, 2)
        k_BHMK = jnp.swapaxes(k_BMHK.astype(jnp.float32), 1, 2)
        path_BHLM = householder_logits(q_BHLK, k_BHMK, w_BHMK, beta_BHM)
        dot_BHLM = jnp.einsum("BHLK,BHMK->BHLM", q_BHLK, k_BHMK)
        return (path_BHLM - dot_BHLM) * q_BLHK.shape[-1] ** -0.5
