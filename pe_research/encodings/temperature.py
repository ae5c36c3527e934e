"""Position-dependent attention temperatures: queries scaled by a function of their position.

As a context grows, a softmax over more keys flattens ("attention fading", Nakanishi, 2025,
arXiv 2501.19399). A query can be sharpened by a factor that grows with its position, which is
a rotate hook on q alone (no rotation: a scale). Both encodings here are NoPE otherwise, and
read positions, which equal token indices (the key counts of causal queries) under the
contiguous sampler. The count of keys itself, in any model and with any sampler, is what the
`ssmax` normalization reads (ModelConfig.normalization; see README, "Encodings").

- `temperature`: Llama 4's attention temperature tuning (Hugging Face transformers,
  models/llama4/modeling_llama4.py, Llama4TextAttention), applied in Llama 4's NoPE layers:
  q *= 1 + attn_scale * log(floor((p + 1) / floor_scale) + 1). Llama 4 uses attn_scale 0.1 and
  floor_scale 8192, its chunked-attention window; at our lengths that is 1 throughout, so the
  default floor_scale here is 16 (the default training length in symbols): the scale steps up
  every 16 positions. Pair it with RoPE layers as Llama 4 does with
  `mixture --pattern rope rope rope temperature`.
- `nape`: NAPE, the positions of ASEntmax (Vasylenko et al., 2025, arXiv 2506.16640,
  "Long-Context Generalization with Sparse Attention"; deep-spin/asentmax,
  synthetic/src/models/architectures/sparse_gemma.py): ALiBi on the first `alibi_heads` heads
  (default half) with slopes 1/1, 1/2, ..., the other heads NoPE with the paper's learned
  length-adaptive temperature q *= delta + beta_h log(p + 2)^gamma_h (delta = 1; beta_h ~
  U(0.1, 1) and gamma_h ~ N(0, 0.1^2) at init, learned per layer and head; `scale="none"`
  leaves them unscaled). The paper pairs it with alpha-entmax attention:
  `--model.normalization entmax15` (ASEntmax); with softmax it is NAPE alone.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp

from pe_research.encodings.base import Dims, Encoding, Params, check_positive
from pe_research.encodings.bias import relative_distance_BLM


def _scale_queries(q_BLHK: jax.Array, scale_BLH: jax.Array) -> jax.Array:
    return (q_BLHK.astype(jnp.float32) * scale_BLH[..., None]).astype(q_BLHK.dtype)


def _positions(pos_BL: jax.Array) -> jax.Array:
    pos_BL = jnp.asarray(pos_BL)
    return (pos_BL[None] if pos_BL.ndim == 1 else pos_BL).astype(jnp.float32)


@dataclasses.dataclass(frozen=True)
class Temperature(Encoding):
    """Llama 4's attention temperature tuning on NoPE: q *= 1 + attn_scale * log(floor((p + 1) /
    floor_scale) + 1) (module docstring)."""

    name = "temperature"
    attn_scale: float = 0.1
    floor_scale: int = 16

    def check(self, dims: Dims, max_position: int) -> None:
        check_positive("temperature attn_scale", self.attn_scale)
        if isinstance(self.floor_scale, bool) or not isinstance(self.floor_scale, int):
            raise ValueError(
                f"temperature floor_scale must be an integer >= 1 (Llama 4: 8192), got "
                f"{self.floor_scale!r}."
            )
        check_positive("temperature floor_scale", self.floor_scale)

    def scale(self, pos_BL: jax.Array) -> jax.Array:
        """The factor of each query, float32 [B, L]."""
        steps_BL = jnp.floor((_positions(pos_BL) + 1.0) / self.floor_scale)
        return 1.0 + self.attn_scale * jnp.log1p(steps_BL)

    def rotate(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        return _scale_queries(q_BLHK, self.scale(qpos_BL)[..., None]), k_BMHK


def nape_slopes(num_heads: int, alibi_heads: int) -> jax.Array:
    """slopes_H: 1/1, 1/2, ..., 1/alibi_heads, then 0 for the NoPE heads (the paper's "linear")."""
    h = jnp.arange(num_heads, dtype=jnp.float32)
    return jnp.where(h < alibi_heads, 1.0 / (h + 1.0), 0.0)


@dataclasses.dataclass(frozen=True)
class NAPE(Encoding):
    """NAPE (Vasylenko et al., 2025): ALiBi on `alibi_heads` heads, NoPE with a learned
    length-adaptive temperature on the rest (module docstring)."""

    name = "nape"
    learned = True
    alibi_heads: int | None = None
    scale: Literal["learn", "none"] = "learn"

    def num_alibi(self, num_heads: int) -> int:
        return num_heads // 2 if self.alibi_heads is None else self.alibi_heads

    def check(self, dims: Dims, max_position: int) -> None:
        a = self.alibi_heads
        if a is not None and (isinstance(a, bool) or not isinstance(a, int) or a < 0):
            raise ValueError(f"nape alibi_heads must be None (half) or an integer >= 0, got {a!r}.")
        if self.num_alibi(dims.num_heads) > dims.num_heads:
            raise ValueError(
                f"nape alibi_heads={a} is more than the model's num_heads={dims.num_heads}: set "
                f"alibi_heads to at most {dims.num_heads} (None: half of them)."
            )
        if self.scale not in ("learn", "none"):
            raise ValueError(
                f"Unknown nape scale {self.scale!r}; choose 'learn' (ASEntmax's length-adaptive "
                "temperature on the NoPE heads) or 'none'."
            )

    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        self.check(dims, 0)
        if self.scale == "none":
            return {}
        k_beta, k_gamma = jax.random.split(key)
        H = dims.num_heads
        return {
            "beta_H": jax.random.uniform(k_beta, (H,), minval=0.1, maxval=1.0),
            "gamma_H": 0.1 * jax.random.normal(k_gamma, (H,)),
        }

    def query_scale(self, params: Params, pos_BL: jax.Array, num_heads: int) -> jax.Array:
        """scale_BLH: delta + beta_h log(p + 2)^gamma_h on the NoPE heads, 1 on the ALiBi ones."""
        log_BL1 = jnp.log(_positions(pos_BL) + 2.0)[..., None]
        beta_11H = params["beta_H"].astype(jnp.float32)[None, None]
        gamma_11H = params["gamma_H"].astype(jnp.float32)[None, None]
        scaled_BLH = 1.0 + beta_11H * log_BL1**gamma_11H
        nope_11H = (jnp.arange(num_heads) >= self.num_alibi(num_heads))[None, None]
        return jnp.where(nope_11H, scaled_BLH, 1.0)

    def rotate(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        if self.scale == "none":
            return q_BLHK, k_BMHK
        scale_BLH = self.query_scale(params, qpos_BL, q_BLHK.shape[2])
        return _scale_queries(q_BLHK, scale_BLH), k_BMHK

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        H = q_BLHK.shape[2]
        slopes_H = nape_slopes(H, self.num_alibi(H))
        dist_BLM = jnp.abs(relative_distance_BLM(qpos_BL, kpos_BM))
        return -slopes_H[None, :, None, None] * dist_BLM[:, None, :, :]
