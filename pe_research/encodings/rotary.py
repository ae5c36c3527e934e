"""Rotary encodings: rotate pairs of q and k components by position-dependent angles.

Because q_m and k_n are rotated by angles m*theta and n*theta, their dot product depends only on
m - n, and rotations preserve norms (Su et al., 2021, "RoFormer").
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp

from pe_research.encodings.base import Dims, Encoding, Params, check_even, check_positive

LAYOUTS = ("half", "interleaved")


def rope_frequencies(
    head_dim: int,
    *,
    base: float = 10000.0,
    fraction: float = 1.0,
    p: float = 1.0,
) -> tuple[jax.Array, float]:
    """Inverse frequencies inv_freq_J of the rotated part of a head, and the attention scale.

    J = int(head_dim * fraction) // 2 frequencies, base^(-2j / 2J) for j = 0..J-1, highest first.
    p-RoPE (Barbero et al., 2025) keeps the first round(p * J) and sets the rest (the lowest
    frequencies) to zero, so p = 0 is NoPE and p = 1 is RoPE.
    """
    check_even("head_dim for rotary encodings", head_dim, "choose d_model / num_heads even.")
    check_positive("rope base", base)
    for what, value in (("fraction", fraction), ("p", p)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"rope {what} must be in [0, 1], got {value}.")
    J = int(head_dim * fraction) // 2
    j_J = jnp.arange(J, dtype=jnp.float32)
    inv_freq_J = jnp.asarray(base, jnp.float32) ** (-2.0 * j_J / max(2 * J, 1))
    keep = round(p * J)
    inv_freq_J = jnp.where(j_J < keep, inv_freq_J, 0.0)
    return inv_freq_J, 1.0


def apply_rope(
    x_BLHK: jax.Array,
    pos_BL: jax.Array,
    inv_freq_J: jax.Array,
    *,
    layout: str = "half",
    attention_scale: float = 1.0,
) -> jax.Array:
    """Rotate the first 2J components of the last axis of x by pos * inv_freq; pass the rest.

    layout "half": component j pairs with j + J (GPT-NeoX / Llama code).
    layout "interleaved": component 2j pairs with 2j + 1 (RoFormer, GPT-J, the seed essay).
    Angles are float32; cos and sin are multiplied by `attention_scale`; the output keeps x's
    dtype. `pos_BL` may also be a 1-D `pos_L` shared by the batch.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"Unknown rope layout {layout!r}; choose one of {LAYOUTS}.")
    K = x_BLHK.shape[-1]
    J = inv_freq_J.shape[0]
    if 2 * J > K:
        raise ValueError(f"apply_rope got {J} frequencies for a head of {K} components (> K/2).")
    pos_BL = jnp.asarray(pos_BL)
    if pos_BL.ndim == 1:
        pos_BL = pos_BL[None, :]
    angle_BLJ = pos_BL.astype(jnp.float32)[:, :, None] * inv_freq_J.astype(jnp.float32)[None, None]
    cos_BL1J = (jnp.cos(angle_BLJ) * attention_scale)[:, :, None, :]
    sin_BL1J = (jnp.sin(angle_BLJ) * attention_scale)[:, :, None, :]
    x32 = x_BLHK.astype(jnp.float32)
    rot, rest = x32[..., : 2 * J], x32[..., 2 * J :]
    if layout == "half":
        a, b = rot[..., :J], rot[..., J:]
    else:
        a, b = rot[..., 0::2], rot[..., 1::2]
    a_out = a * cos_BL1J - b * sin_BL1J
    b_out = b * cos_BL1J + a * sin_BL1J
    if layout == "half":
        rot = jnp.concatenate([a_out, b_out], axis=-1)
    else:
        rot = jnp.stack([a_out, b_out], axis=-1).reshape(rot.shape)
    return jnp.concatenate([rot, rest], axis=-1).astype(x_BLHK.dtype)


@dataclasses.dataclass(frozen=True)
class RoPE(Encoding):
    """Rotary position embedding (Su et al., 2021) applied to q and k in every layer.

    `layout`: "half" (default, Llama-family code) or "interleaved" (RoFormer, the essay).
    `fraction`: share of each head's dimensions that rotate (GPT-NeoX partial rotary).
    `p`: share of the highest frequencies kept (p-RoPE, Barbero et al. 2025).
    """

    name = "rope"
    base: float = 10000.0
    layout: Literal["half", "interleaved"] = "half"
    fraction: float = 1.0
    p: float = 1.0

    def check(self, dims: Dims, max_position: int) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"Unknown rope layout {self.layout!r}; choose one of {LAYOUTS}.")
        rope_frequencies(dims.head_dim, base=self.base, fraction=self.fraction, p=self.p)

    def rotate(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        inv_freq_J, scale = rope_frequencies(
            q_BLHK.shape[-1], base=self.base, fraction=self.fraction, p=self.p
        )
        q = apply_rope(q_BLHK, qpos_BL, inv_freq_J, layout=self.layout, attention_scale=scale)
        k = apply_rope(k_BMHK, kpos_BM, inv_freq_J, layout=self.layout, attention_scale=scale)
        return q, k
