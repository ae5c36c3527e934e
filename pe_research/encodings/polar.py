"""PoPE: polar coordinates for q and k, magnitude from the content and angle from the position
alone (Gopalakrishnan, Csordas, Schmidhuber and Mozer, 2025, arXiv 2509.10534, "Decoupling the
'What' and 'Where' With Polar Coordinate Positional Embeddings").

RoPE turns the pair (x_2j, x_2j+1) of a query by its position, so the pair's own angle (content)
and the position's angle add up: what and where are entangled. PoPE makes each of the K
components c of a head one complex number whose magnitude is softplus(x_c) (content only, >= 0)
and whose phase is the position times a frequency theta_c (position only):

    logit(m, n) = sum_c softplus(q_c) softplus(k_c) cos((m - n) theta_c + delta_c)

(m the query's position, n the key's), theta_c = base^(-c / K) for c = 0..K-1 (K frequencies
over RoPE's range, one per component, where RoPE has K / 2), and delta_c a learned phase per
layer, head and component (initialised to 0). The logit depends on positions only through
m - n. The score is Re<q~, k~> of K complex numbers, a real dot product of 2K components, so
PoPE cannot be a rotation of the model's K-component q and k: it is the bias hook, which adds
scale * (PoPE's logit - q.k) to the model's scale * q.k (scale = K^-1/2), leaving PoPE's logit.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from pe_research.encodings.base import Dims, Encoding, Params, check_positive, require_scaled_logits


def pope_frequencies(head_dim: int, base: float, dtype=jnp.float32) -> jax.Array:
    """theta_K = base^(-c / K), c = 0..K-1: one frequency per component."""
    return jnp.asarray(base, dtype) ** (-jnp.arange(head_dim, dtype=dtype) / head_dim)


def polar_components(
    x_BLHK: jax.Array, pos_BL: jax.Array, theta_K: jax.Array, phase_HK: jax.Array | None = None
) -> tuple[jax.Array, jax.Array]:
    """(softplus(x) cos(pos theta - phase), softplus(x) sin(pos theta - phase)), in float32
    (float64 when theta is)."""
    dtype = theta_K.dtype
    magnitude_BLHK = jax.nn.softplus(x_BLHK.astype(dtype))
    angle_BLHK = jnp.asarray(pos_BL).astype(dtype)[:, :, None, None] * theta_K[None, None, None]
    if phase_HK is not None:
        angle_BLHK = angle_BLHK - phase_HK.astype(dtype)[None, None]
    return magnitude_BLHK * jnp.cos(angle_BLHK), magnitude_BLHK * jnp.sin(angle_BLHK)


@dataclasses.dataclass(frozen=True)
class PoPE(Encoding):
    """PoPE (Gopalakrishnan et al., 2025): softplus magnitudes, positional phases, a learned
    phase bias per layer, head and component (module docstring); the bias hook."""

    name = "pope"
    learned = True
    base: float = 10000.0

    def check(self, dims: Dims, max_position: int) -> None:
        require_scaled_logits("pope", dims)
        check_positive("pope base", self.base)
        if self.base <= 1:
            raise ValueError(
                f"pope base must be > 1 (frequencies falling with c), got {self.base}."
            )

    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        return {"phase_HK": jnp.zeros((dims.num_heads, dims.head_dim), jnp.float32)}

    def logits(
        self, params: Params, q_BLHK: jax.Array, k_BMHK: jax.Array, qpos_BL, kpos_BM
    ) -> jax.Array:
        """PoPE's logit_BHLM = sum_c |q~_c| |k~_c| cos((m - n) theta_c + delta_c), unscaled."""
        dtype = jnp.promote_types(q_BLHK.dtype, jnp.float32)  # float64 when given
        theta_K = pope_frequencies(q_BLHK.shape[-1], self.base, dtype)
        qa, qb = polar_components(q_BLHK, qpos_BL, theta_K)
        ka, kb = polar_components(k_BMHK, kpos_BM, theta_K, params["phase_HK"])
        return jnp.einsum("BLHK,BMHK->BHLM", qa, ka) + jnp.einsum("BLHK,BMHK->BHLM", qb, kb)

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        dtype = jnp.promote_types(q_BLHK.dtype, jnp.float32)
        dot_BHLM = jnp.einsum("BLHK,BMHK->BHLM", q_BLHK, k_BMHK, preferred_element_type=dtype)
        pope_BHLM = self.logits(params, q_BLHK, k_BMHK, qpos_BL, kpos_BM)
        return (pope_BHLM - dot_BHLM) * q_BLHK.shape[-1] ** -0.5
