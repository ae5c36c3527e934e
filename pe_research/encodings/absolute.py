"""Absolute encodings: a vector per position added to the token embedding (the `embed` hook)."""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp

from pe_research.encodings.base import Dims, Encoding, Params, check_even, check_positive


@dataclasses.dataclass(frozen=True)
class NoPE(Encoding):
    """No positional encoding: causal masking alone carries order (Kazemnejad et al., 2023)."""

    name = "nope"


def sinusoidal_table(
    pos_L: jax.Array, dim: int, *, base: float = 10000.0, layout: str = "interleaved"
) -> jax.Array:
    """Vaswani et al. (2017): PE(p, 2i) = sin(p / base^(2i/d)), PE(p, 2i+1) = cos(same).

    `layout="interleaved"` is the paper's (sin and cos of one frequency side by side);
    `layout="halves"` puts all sines first and all cosines second (tensor2tensor style).
    Angles are computed in float32. Returns table_LD (float32).
    """
    check_even("sinusoidal dim", dim, "each frequency fills a (sin, cos) pair of components.")
    if layout not in ("interleaved", "halves"):
        raise ValueError(f"Unknown sinusoidal layout {layout!r}; choose 'interleaved' or 'halves'.")
    inv_freq_J = base ** (-jnp.arange(0, dim, 2, dtype=jnp.float32) / dim)
    angle_LJ = jnp.asarray(pos_L, jnp.float32)[:, None] * inv_freq_J[None, :]
    sin_LJ, cos_LJ = jnp.sin(angle_LJ), jnp.cos(angle_LJ)
    if layout == "interleaved":
        return jnp.stack([sin_LJ, cos_LJ], axis=-1).reshape(angle_LJ.shape[0], dim)
    return jnp.concatenate([sin_LJ, cos_LJ], axis=-1)


@dataclasses.dataclass(frozen=True)
class Sinusoidal(Encoding):
    """Fixed sinusoids added to the token embedding (Vaswani et al., 2017).

    Convention: interleaved (sin, cos) pairs by default, as in the paper and the seed essay.
    """

    name = "sinusoidal"
    base: float = 10000.0
    layout: Literal["interleaved", "halves"] = "interleaved"

    def check(self, dims: Dims, max_position: int) -> None:
        check_positive("sinusoidal base", self.base)
        check_even("d_model for sinusoidal", dims.d_model, "pick an even d_model.")

    def embed(self, params: Params, x_BLD: jax.Array, pos_BL: jax.Array) -> jax.Array:
        B, L, D = x_BLD.shape
        table_XD = sinusoidal_table(pos_BL.reshape(-1), D, base=self.base, layout=self.layout)
        return x_BLD + table_XD.reshape(B, L, D).astype(x_BLD.dtype)


@dataclasses.dataclass(frozen=True)
class LearnedAbsolute(Encoding):
    """A trained table of `max_positions` vectors (Gehring et al. 2017; BERT; GPT-2).

    Positions at or beyond the table are an error at configuration time (`check`), and a gather
    that is out of range anyway reads NaN rather than a clamped row, so it cannot pass silently.
    """

    name = "learned"
    learned = True
    max_positions: int = 1024
    init_std: float = 0.02

    def check(self, dims: Dims, max_position: int) -> None:
        check_positive("learned max_positions", self.max_positions)
        if max_position >= self.max_positions:
            raise ValueError(
                f"learned absolute encoding has a table of max_positions={self.max_positions} "
                f"rows but the run needs position {max_position}: raise max_positions to at "
                f"least {max_position + 1} or evaluate on shorter lengths."
            )

    def init_embed(self, key: jax.Array, dims: Dims) -> Params:
        table = self.init_std * jax.random.normal(key, (self.max_positions, dims.d_model))
        return {"table_PD": table}

    def embed(self, params: Params, x_BLD: jax.Array, pos_BL: jax.Array) -> jax.Array:
        table_PD = params["table_PD"]
        rows_BLD = jnp.take(table_PD, pos_BL, axis=0, mode="fill", fill_value=jnp.nan)
        return x_BLD + rows_BLD.astype(x_BLD.dtype)
