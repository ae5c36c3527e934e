"""FoPE: each rotary component a learned Fourier series over RoPE's frequencies (Hua et al.,
2024, arXiv 2412.17739, "Fourier Position Embedding: Enhancing Attention's Periodic Extension
for Length Generalization").

RoPE gives rotary channel j the pure tone (cos p theta_j, sin p theta_j). FoPE replaces it with
a series over the kept frequencies, per head,

    cos_j(p) = sum_i C[i, j] cos(p theta_i),    sin_j(p) = sum_i S[i, j] sin(p theta_i),

and applies them as RoPE applies its tones (`x cos + rotate_half(x) sin`, the half layout), so
that attention sees each channel as a mixture of frequencies rather than one, which the paper
argues keeps the periodic extension intact beyond the training length. Frequencies too low to
complete a period within the training length (wavelength 2 pi / theta > `train_length`, HoPE's
rule) are clipped to zero: their channels pass through unrotated (cos 1, sin 0), as in vLLM's
`rotary_embedding/fope.py` (the authors' OLMo code pads sin with 1 there instead; vLLM's fix
keeps the zero frequency a zero frequency).

C and S are learned per layer and head (the released configs' `fope_sep_head`), square over
the kept frequencies, initialised as in the authors' `eye_xavier_norm`: identity plus
Xavier-normal noise of gain `init_gain` (their 60M model: 0.3), so FoPE starts near HoPE.
`train_length` is the run's training length in positions, as for HoPE.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from pe_research.encodings.base import Dims, Encoding, Params, check_even
from pe_research.encodings.rotary import HoPE, rope_frequencies


@dataclasses.dataclass(frozen=True)
class FoPE(Encoding):
    """FoPE (Hua et al., 2024): learned Fourier series per rotary channel, low frequencies
    clipped to zero; half layout; C, S per layer and head (module docstring)."""

    name = "fope"
    learned = True
    base: float = 10000.0
    train_length: int = 64
    init_gain: float = 0.3

    def kept(self, head_dim: int) -> int:
        """J': the frequencies that complete a period within train_length (HoPE's rule)."""
        return HoPE(base=self.base, train_length=self.train_length).kept_pairs(head_dim)

    def check(self, dims: Dims, max_position: int) -> None:
        check_even("head_dim for fope", dims.head_dim, "choose d_model / num_heads even.")
        if isinstance(self.base, bool) or not isinstance(self.base, int | float) or self.base <= 1:
            raise ValueError(
                f"fope base must be > 1 (frequencies falling with j), got {self.base}."
            )
        if isinstance(self.train_length, bool) or not isinstance(self.train_length, int):
            raise ValueError(f"fope train_length must be an integer, got {self.train_length!r}.")
        if self.train_length < 7:
            raise ValueError(
                f"fope train_length={self.train_length} keeps no frequency: even the highest (1 "
                "radian per position) needs 2 pi = 6.28 positions for a period. Set train_length "
                "to the training length in positions, an integer >= 7."
            )
        gain = self.init_gain
        if isinstance(gain, bool) or not isinstance(gain, int | float) or gain < 0:
            raise ValueError(
                f"fope init_gain must be a number >= 0 (the noise added to the identity; the "
                f"authors' 60M model uses 0.3), got {gain!r}."
            )

    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        self.check(dims, 0)
        H, J = dims.num_heads, self.kept(dims.head_dim)
        # Xavier normal: std = gain * sqrt(2 / (fan_in + fan_out)), fan_in = fan_out = J.
        std = self.init_gain * (1.0 / J) ** 0.5
        k_cos, k_sin = jax.random.split(key)
        eye_HJI = jnp.broadcast_to(jnp.eye(J), (H, J, J))
        return {
            "cos_coef_HJI": eye_HJI + std * jax.random.normal(k_cos, (H, J, J)),
            "sin_coef_HJI": eye_HJI + std * jax.random.normal(k_sin, (H, J, J)),
        }

    def series(self, params: Params, pos_BL: jax.Array, head_dim: int) -> tuple[jax.Array, ...]:
        """cos_BLHJ, sin_BLHJ over all head_dim / 2 channels: the series on the kept ones, 1 and
        0 on the clipped ones."""
        K = head_dim
        J = self.kept(K)
        inv_freq_J = rope_frequencies(K, base=self.base)[0][:J]
        angle_BLJ = jnp.asarray(pos_BL).astype(jnp.float32)[..., None] * inv_freq_J[None, None]
        cos_coef = params["cos_coef_HJI"].astype(jnp.float32)
        sin_coef = params["sin_coef_HJI"].astype(jnp.float32)
        cos_BLHI = jnp.einsum("BLJ,HJI->BLHI", jnp.cos(angle_BLJ), cos_coef)
        sin_BLHI = jnp.einsum("BLJ,HJI->BLHI", jnp.sin(angle_BLJ), sin_coef)
        rest = ((0, 0), (0, 0), (0, 0), (0, K // 2 - J))
        return jnp.pad(cos_BLHI, rest, constant_values=1.0), jnp.pad(sin_BLHI, rest)

    def _apply(self, params: Params, x_BLHK: jax.Array, pos_BL: jax.Array) -> jax.Array:
        pos_BL = jnp.asarray(pos_BL)
        if pos_BL.ndim == 1:
            pos_BL = pos_BL[None]
        cos_BLHJ, sin_BLHJ = self.series(params, pos_BL, x_BLHK.shape[-1])
        x = x_BLHK.astype(jnp.float32)
        J = x.shape[-1] // 2
        a, b = x[..., :J], x[..., J:]
        out = jnp.concatenate([a * cos_BLHJ - b * sin_BLHJ, b * cos_BLHJ + a * sin_BLHJ], axis=-1)
        return out.astype(x_BLHK.dtype)

    def rotate(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        return self._apply(params, q_BLHK, qpos_BL), self._apply(params, k_BMHK, kpos_BM)
