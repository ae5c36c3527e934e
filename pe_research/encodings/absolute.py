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

    `init_std` is the table's starting spread beside the model's unit-variance token embeddings,
    so it is the ratio of positions to tokens at the start. The default 0.02 starts positions
    50x below the tokens; the papers differ (GPT-2: 0.5, tokens 0.02 and positions 0.01; Cho et
    al.'s code: 1; Ruoss et al.'s: 6.25), and it matters: the 1-layer addition model learns with
    1 and not with 0.02 (experiments/addition.py). Reproductions set their paper's ratio.
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


@dataclasses.dataclass(frozen=True)
class Integer(Encoding):
    """The raw position p added to every embedding component (the seed essay's first attempt).

    Kept as a baseline that fails by design: for p beyond a few units the position dwarfs the
    unit-scale token embedding, so the token signal is lost (Fleetwood, "You could have designed
    state of the art positional encoding", 2024).
    """

    name = "integer"

    def embed(self, params: Params, x_BLD: jax.Array, pos_BL: jax.Array) -> jax.Array:
        value_BL1 = pos_BL.astype(jnp.float32)[:, :, None]
        return x_BLD + value_BL1.astype(x_BLD.dtype)


@dataclasses.dataclass(frozen=True)
class NormalizedInteger(Encoding):
    """p / n added to every embedding component, n the length of the row (the essay's second try).

    Values stay in [0, 1) but the same position is encoded differently in sequences of different
    lengths, breaking the essay's property Pr1. The hooks do not receive lengths, so n is derived
    from the positions: n = max(pos over the row) + 1, which is the number of real tokens for
    contiguous positions (0..n-1, padding at 0). Under other samplers (offset, randomized,
    scaled) n is the largest position plus one instead.
    """

    name = "normalized_integer"

    def embed(self, params: Params, x_BLD: jax.Array, pos_BL: jax.Array) -> jax.Array:
        pos_BL = pos_BL.astype(jnp.float32)
        n_B1 = jnp.max(pos_BL, axis=1, keepdims=True) + 1.0
        value_BL1 = (pos_BL / n_B1)[:, :, None]
        return x_BLD + value_BL1.astype(x_BLD.dtype)


def binary_table(pos_L: jax.Array, dim: int, *, bits: int = 16) -> jax.Array:
    """The `bits`-bit binary code of each position, stretched to `dim` components (0/1 values).

    Component c holds bit (c * bits) // dim, least significant bit first, so each bit fills a
    contiguous block of about dim / bits components: the essay's "stretch" of the binary
    representation to the embedding width. Positions outside [0, 2^bits) have no code and read
    NaN. Returns table_LD (float32).
    """
    if not 1 <= bits <= 31:
        raise ValueError(f"binary bits must be in [1, 31] (int32 positions), got {bits}.")
    if dim < bits:
        raise ValueError(
            f"binary encoding needs at least one component per bit: dim={dim} < bits={bits}; "
            "lower bits or raise d_model."
        )
    pos_L = jnp.asarray(pos_L, jnp.int32)
    bit_D = (jnp.arange(dim, dtype=jnp.int32) * bits) // dim
    code_LD = jnp.right_shift(pos_L[:, None], bit_D[None, :]) & 1
    in_range_L1 = ((pos_L >= 0) & (jnp.right_shift(pos_L, bits) == 0))[:, None]
    return jnp.where(in_range_L1, code_LD.astype(jnp.float32), jnp.nan)


@dataclasses.dataclass(frozen=True)
class Binary(Encoding):
    """The binary code of the position added to the token embedding (the essay's third try).

    Convention: bits take the values 0 and 1, as in the essay, so the encoding stays in [0, 1]
    and is unique for every position below 2^bits; bit i (LSB first) is stretched over a block of
    d_model / bits components (see `binary_table`). Its discrete jumps are what motivates the
    smooth sinusoids that follow it in the essay.
    """

    name = "binary"
    bits: int = 16

    def check(self, dims: Dims, max_position: int) -> None:
        if not 1 <= self.bits <= 31:
            raise ValueError(f"binary bits must be in [1, 31] (int32 positions), got {self.bits}.")
        if dims.d_model < self.bits:
            raise ValueError(
                f"binary encoding stretches {self.bits} bits over d_model={dims.d_model} "
                f"components: lower bits to at most {dims.d_model} or raise d_model."
            )
        if max_position >= 2**self.bits:
            raise ValueError(
                f"binary encoding with bits={self.bits} codes positions below {2**self.bits} "
                f"but the run needs position {max_position}: raise bits to at least "
                f"{max_position.bit_length()}."
            )

    def embed(self, params: Params, x_BLD: jax.Array, pos_BL: jax.Array) -> jax.Array:
        B, L, D = x_BLD.shape
        table_XD = binary_table(pos_BL.reshape(-1), D, bits=self.bits)
        return x_BLD + table_XD.reshape(B, L, D).astype(x_BLD.dtype)
