"""Relative encodings that add a bias to the attention logits (the `bias` hook)."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from pe_research.encodings.base import Encoding, Params


def alibi_slopes(num_heads: int) -> jax.Array:
    """Head slopes of Press et al. (2022), ALiBi, as float32 slopes_H.

    For n heads with n a power of two: the geometric sequence starting at and multiplied by
    2^(-8/n). Otherwise the slopes of the closest smaller power of two m, followed by every other
    slope of 2m heads, up to n in total (the rule of the authors' reference code).
    """
    if num_heads < 1:
        raise ValueError(f"alibi_slopes needs num_heads >= 1, got {num_heads}.")

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    m = 2 ** math.floor(math.log2(num_heads))
    slopes = power_of_two(m) + power_of_two(2 * m)[0::2][: num_heads - m]
    return jnp.asarray(slopes, jnp.float32)


def relative_distance_BLM(qpos_BL: jax.Array, kpos_BM: jax.Array) -> jax.Array:
    """Key position minus query position, as float32 (negative for keys in the past)."""
    return kpos_BM.astype(jnp.float32)[:, None, :] - qpos_BL.astype(jnp.float32)[:, :, None]


@dataclasses.dataclass(frozen=True)
class ALiBi(Encoding):
    """Attention with linear biases (Press et al., 2022): logits += -slope_h * |m - n|.

    Under a causal mask this is exactly the paper's -slope * (query - key); without one it is the
    symmetric bidirectional variant. No embedding or rotation.
    """

    name = "alibi"

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        slopes_H = alibi_slopes(q_BLHK.shape[2])
        dist_BLM = jnp.abs(relative_distance_BLM(qpos_BL, kpos_BM))
        return -slopes_H[None, :, None, None] * dist_BLM[:, None, :, :]
