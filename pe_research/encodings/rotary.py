"""Rotary encodings: rotate pairs of q and k components by position-dependent angles.

Because q_m and k_n are rotated by angles m*theta and n*theta, their dot product depends only on
m - n, and rotations preserve norms (Su et al., 2021, "RoFormer"). This module holds RoPE with
its context-extension scalings (the `rope_scaling` convention of Llama-family configs), HoPE,
n-D axial RoPE, and xPos.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

import jax
import jax.numpy as jnp

from pe_research.encodings.base import Dims, Encoding, Params, check_even, check_positive
from pe_research.encodings.rope_scaling import (
    ROPE_PARAMETER_FIELDS,
    RopeScaling,
    as_scaling,
    scaled_inv_freq,
    split_rope_parameters,
)

LAYOUTS = ("half", "interleaved")


def rope_frequencies(
    head_dim: int,
    *,
    base: float = 10000.0,
    fraction: float = 1.0,
    p: float = 1.0,
    scaling: RopeScaling | dict[str, Any] | None = None,
    seq_len: jax.Array | int | None = None,
) -> tuple[jax.Array, float]:
    """Inverse frequencies inv_freq_J of the rotated part of a head, and the attention scale.

    J = int(head_dim * fraction) // 2 frequencies, base^(-2j / 2J) for j = 0..J-1, highest first,
    then rescaled by `scaling` (linear, ntk, dynamic, yarn, llama3; the scaling formulas use the
    rotated width 2J as `dim`). p-RoPE (Barbero et al., 2025) keeps the first round(p * J) and sets
    the rest (the lowest frequencies) to zero, so p = 0 is NoPE and p = 1 is RoPE. `seq_len` is
    read by dynamic scaling only (None: no longer than the original context) and may be traced.
    The attention scale multiplies cos and sin; it is 1.0 except for yarn.
    """
    check_even("head_dim for rotary encodings", head_dim, "choose d_model / num_heads even.")
    # A traced base or p is a packed run's value, checked on its concrete config already.
    if not isinstance(base, jax.core.Tracer):
        check_positive("rope base", base)
    for what, value in (("fraction", fraction), ("p", p)):
        if not isinstance(value, jax.core.Tracer) and not 0.0 <= value <= 1.0:
            raise ValueError(f"rope {what} must be in [0, 1], got {value}.")
    scaling = as_scaling(scaling)
    J = int(head_dim * fraction) // 2
    if scaling is None or J == 0:
        j_J = jnp.arange(J, dtype=jnp.float32)
        inv_freq_J, scale = jnp.asarray(base, jnp.float32) ** (-2.0 * j_J / max(2 * J, 1)), 1.0
    else:
        inv_freq_J, scale = scaled_inv_freq(base, 2 * J, scaling, seq_len)
    # Half to even, as Python's round, also for a traced p.
    keep = jnp.round(p * J) if isinstance(p, jax.core.Tracer) else round(p * J)
    inv_freq_J = jnp.where(jnp.arange(J) < keep, inv_freq_J, 0.0)
    return inv_freq_J, scale


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
    pos_BL = jnp.asarray(pos_BL)
    if pos_BL.ndim == 1:
        pos_BL = pos_BL[None, :]
    angle_BLJ = pos_BL.astype(jnp.float32)[:, :, None] * inv_freq_J.astype(jnp.float32)[None, None]
    return rotate_pairs(x_BLHK, angle_BLJ, layout=layout, attention_scale=attention_scale)


def rotate_pairs(
    x_BLHK: jax.Array, angle_BLJ: jax.Array, *, layout: str = "half", attention_scale: float = 1.0
) -> jax.Array:
    """Rotate rotation pair j of the first 2J components of x by angle_BLJ[..., j] (the angle of
    each pair given directly, e.g. by M-RoPE, whose pairs read different position axes); pass the
    rest. Layouts and dtypes as in `apply_rope`."""
    if layout not in LAYOUTS:
        raise ValueError(f"Unknown rope layout {layout!r}; choose one of {LAYOUTS}.")
    K = x_BLHK.shape[-1]
    J = angle_BLJ.shape[-1]
    if 2 * J > K:
        raise ValueError(f"apply_rope got {J} frequencies for a head of {K} components (> K/2).")
    angle_BLJ = angle_BLJ.astype(jnp.float32)
    cos_BLJ = jnp.cos(angle_BLJ) * attention_scale
    sin_BLJ = jnp.sin(angle_BLJ) * attention_scale
    # out = x * cos + swap(x) * sin, where swap exchanges the two members of each pair and sin
    # carries the sign (-sin on a pair's first member, +sin on its second): the first member is
    # a cos - b sin, the second b cos + a sin. The swap is a reversal of an axis of size 2, which
    # XLA fuses into one elementwise pass. Concatenating a_out and b_out (the textbook form)
    # gave fusions that XLA's CPU backend ran several times slower per element: the peer's
    # model (head_dim 8, 8 buckets) stepped 8-15% faster with this form, bit for bit the same.
    ones, zeros = (jnp.full((*cos_BLJ.shape[:-1], K - 2 * J), v, jnp.float32) for v in (1, 0))
    if layout == "half":  # [J cos, J cos, rest]: pair j is (j, J + j)
        cos_BLK = jnp.concatenate([cos_BLJ, cos_BLJ, ones], axis=-1)
        sin_BLK = jnp.concatenate([-sin_BLJ, sin_BLJ, zeros], axis=-1)
    else:  # [cos_0, cos_0, cos_1, cos_1, ..., rest]: pair j is (2j, 2j + 1)
        cos_BLK = jnp.concatenate([cos_BLJ.repeat(2, axis=-1), ones], axis=-1)
        sin_BLK = jnp.concatenate(
            [jnp.stack([-sin_BLJ, sin_BLJ], -1).reshape(*sin_BLJ.shape[:-1], 2 * J), zeros], axis=-1
        )
    x32 = x_BLHK.astype(jnp.float32)
    rot, rest = x32[..., : 2 * J], x32[..., 2 * J :]
    pairs = (2, J) if layout == "half" else (J, 2)
    axis = -2 if layout == "half" else -1
    swapped = jnp.flip(rot.reshape(*rot.shape[:-1], *pairs), axis=axis).reshape(rot.shape)
    if 2 * J < K:  # the unrotated rest meets cos 1 and sin 0: it passes unchanged
        swapped = jnp.concatenate([swapped, rest], axis=-1)
    out = x32 * cos_BLK[:, :, None] + swapped * sin_BLK[:, :, None]
    return out.astype(x_BLHK.dtype)


# Other names of RoPE's `scaling`, as Hugging Face configs spell it (older, newer).
_ALIASES = ("rope_scaling", "rope_parameters")


def _check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"Unknown rope layout {layout!r}; choose one of {LAYOUTS}.")


@dataclasses.dataclass(frozen=True)
class RoPE(Encoding):
    """Rotary position embedding (Su et al., 2021) applied to q and k in every layer.

    `layout`: "half" (default, Llama-family code) or "interleaved" (RoFormer, the essay).
    `fraction`: share of each head's dimensions that rotate (GPT-NeoX partial rotary).
    `p`: share of the highest frequencies kept (p-RoPE, Barbero et al. 2025).
    `scaling`: a Llama-family `rope_scaling` (RopeScaling or its dict form): linear (Chen et al.,
    2023), ntk, dynamic (bloc97 / emozilla), yarn (Peng et al., 2023), llama3, longrope (Ding et
    al., 2024). Dynamic and longrope read the sequence length as the largest key position + 1.
    `rope_scaling`, `rope_parameters`: the same dict under the names Hugging Face configs use (the
    newer `rope_parameters` may also carry rope_theta = `base`, partial_rotary_factor = `fraction`
    and rope_type "default"); folded into `scaling` on construction, so they read back as None.
    """

    name = "rope"
    packable = ("base", "p")
    base: float = 10000.0
    layout: Literal["half", "interleaved"] = "half"
    fraction: float = 1.0
    p: float = 1.0
    scaling: RopeScaling | None = None
    rope_scaling: RopeScaling | None = None
    rope_parameters: RopeScaling | None = None

    def __post_init__(self):
        given = {
            name: split_rope_parameters(value, name)
            if name != "scaling"
            else (as_scaling(value), {})
            for name in ("scaling", *_ALIASES)
            if (value := getattr(self, name)) is not None
        }
        if len({scaling for scaling, _ in given.values()}) > 1:
            shown = ", ".join(f"{name}={scaling}" for name, (scaling, _) in given.items())
            raise ValueError(
                f"rope got different scalings under several names ({shown}): "
                f"{' and '.join(given)} name the same setting, so give only one of them."
            )
        for name, (_, fields) in given.items():
            for field, value in fields.items():
                if getattr(self, field) != value:
                    key = next(k for k, f in ROPE_PARAMETER_FIELDS.items() if f == field)
                    raise ValueError(
                        f"rope {name} sets {key}={value:g} but {field}={getattr(self, field):g}: "
                        f"set {field}={value:g} as well ({field} is this library's name for {key})."
                    )
        scaling = next(iter(given.values()))[0] if given else None
        object.__setattr__(self, "scaling", scaling)
        for name in _ALIASES:
            object.__setattr__(self, name, None)

    def check(self, dims: Dims, max_position: int) -> None:
        _check_layout(self.layout)
        self._frequencies(dims.head_dim, None)

    def packable_fields(self) -> tuple[str, ...]:
        # A scaling reads the base in Python arithmetic: scaled runs pack by seed only.
        return self.packable if self.scaling is None else ()

    def hyperparameters(self) -> dict[str, Any]:
        # The dict form of the scaling, so that config.json stays plain JSON.
        scaling = None if self.scaling is None else self.scaling.to_dict()
        hp = {k: v for k, v in super().hyperparameters().items() if k not in _ALIASES}
        return {**hp, "scaling": scaling}

    def _frequencies(self, head_dim: int, seq_len: jax.Array | None) -> tuple[jax.Array, float]:
        return rope_frequencies(
            head_dim,
            base=self.base,
            fraction=self.fraction,
            p=self.p,
            scaling=self.scaling,
            seq_len=seq_len,
        )

    def rotate(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        seq_len = jnp.max(kpos_BM) + 1
        inv_freq_J, scale = self._frequencies(q_BLHK.shape[-1], seq_len)
        q = apply_rope(q_BLHK, qpos_BL, inv_freq_J, layout=self.layout, attention_scale=scale)
        k = apply_rope(k_BMHK, kpos_BM, inv_freq_J, layout=self.layout, attention_scale=scale)
        return q, k


@dataclasses.dataclass(frozen=True)
class HoPE(Encoding):
    """HoPE (Chen et al., 2024, arXiv 2410.21216, "HoPE: A Novel Positional Encoding Without
    Long-Term Decay"): RoPE keeping only its high-frequency rotation pairs.

    Rule used here: pair j (frequency theta_j = base^(-2j/K), highest first) rotates if its
    wavelength 2 pi / theta_j is at most `train_length`, i.e. it turns through at least one full
    cycle within the training context; the lower frequencies, which never complete a cycle in
    training (the paper's "activated" components behind the U-shaped attention, and the top
    low-frequency ones that settle into constant, semantic use), are position-free: they pass
    through unrotated. Set `train_length` to the run's training length in positions.

    Relation to p-RoPE (Barbero et al., 2025, RoPE's `p`): both drop the lowest frequencies. p-RoPE
    keeps a fixed share p of the pairs; HoPE derives the share from the training length, so
    HoPE(train_length=n) equals RoPE(p=k/J) with k the number of pairs whose wavelength is <= n.
    Like RoPE its q.k depends only on m - n and it preserves norms; with no decaying low
    frequencies left it has no long-term decay. Layout as RoPE's.
    """

    name = "hope"
    base: float = 10000.0
    train_length: int = 64
    layout: Literal["half", "interleaved"] = "half"

    def kept_pairs(self, head_dim: int) -> int:
        """The number of rotation pairs whose wavelength 2 pi base^(2j/K) is <= train_length."""
        J = head_dim // 2
        # Wavelengths in float64 and Python: the cut is a static count, exact at the boundary.
        return sum(
            2 * math.pi * self.base ** (2 * j / head_dim) <= self.train_length for j in range(J)
        )

    def check(self, dims: Dims, max_position: int) -> None:
        _check_layout(self.layout)
        check_even("head_dim for hope", dims.head_dim, "choose d_model / num_heads even.")
        check_positive("hope base", self.base)
        if self.base <= 1:
            raise ValueError(
                f"hope base must be > 1 (frequencies falling with j), got {self.base}."
            )
        if not isinstance(self.train_length, int) or self.train_length < 7:
            raise ValueError(
                f"hope train_length={self.train_length!r} keeps no rotation pair: even the highest "
                "frequency (1 radian per position) needs 2 pi = 6.28 positions for a cycle. Set "
                "train_length to the training length, an integer >= 7, or use nope."
            )

    def rotate(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        K = q_BLHK.shape[-1]
        self.check(Dims(d_model=K, num_heads=1, head_dim=K), 0)
        inv_freq_J, _ = rope_frequencies(K, base=self.base)
        inv_freq_J = jnp.where(jnp.arange(K // 2) < self.kept_pairs(K), inv_freq_J, 0.0)
        q = apply_rope(q_BLHK, qpos_BL, inv_freq_J, layout=self.layout)
        k = apply_rope(k_BMHK, kpos_BM, inv_freq_J, layout=self.layout)
        return q, k


@dataclasses.dataclass(frozen=True)
class RoPEND(Encoding):
    """Axial n-D RoPE (Heo et al., 2024, "Rotary Position Embedding for Vision Transformer").

    Positions are `pos_BLA` with A = `axes` coordinates per token. Each head is split into A
    contiguous blocks of K / A components; block a is a RoPE (in `layout`, frequencies
    base^(-2j / (K/A))) of coordinate a alone, so q.k depends only on the per-axis offsets and
    never mixes axes. Rotation only: no embedding, no bias.
    """

    name = "rope_nd"
    axes: int = 2
    base: float = 10000.0
    layout: Literal["half", "interleaved"] = "half"

    @property
    def position_axes(self) -> int:
        return self.axes

    def check(self, dims: Dims, max_position: int) -> None:
        _check_layout(self.layout)
        check_positive("rope_nd base", self.base)
        if self.axes < 1:
            raise ValueError(f"rope_nd axes must be >= 1, got {self.axes}.")
        if dims.head_dim % (2 * self.axes):
            raise ValueError(
                f"rope_nd needs head_dim divisible by 2 * axes = {2 * self.axes} (a whole number "
                f"of rotation pairs per axis), got head_dim={dims.head_dim} with axes={self.axes}: "
                "change d_model / num_heads or the number of axes."
            )

    def _rotate_one(self, x_BLHK: jax.Array, pos_BLA: jax.Array) -> jax.Array:
        A = self.axes
        if pos_BLA.ndim != 3 or pos_BLA.shape[-1] != A:
            raise ValueError(
                f"rope_nd with axes={A} needs positions pos_BLA of shape (B, L, {A}), got shape "
                f"{tuple(pos_BLA.shape)}: use a position sampler that emits {A}-D coordinates."
            )
        K = x_BLHK.shape[-1]
        self.check(Dims(d_model=K, num_heads=1, head_dim=K), 0)
        width = K // A
        inv_freq_J, _ = rope_frequencies(width, base=self.base)
        blocks = [
            apply_rope(
                x_BLHK[..., a * width : (a + 1) * width],
                pos_BLA[:, :, a],
                inv_freq_J,
                layout=self.layout,
            )
            for a in range(A)
        ]
        return jnp.concatenate(blocks, axis=-1)

    def rotate(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        return self._rotate_one(q_BLHK, qpos_BL), self._rotate_one(k_BMHK, kpos_BM)


@dataclasses.dataclass(frozen=True)
class XPos(Encoding):
    """xPos (Sun et al., 2022, "A Length-Extrapolatable Transformer"): RoPE with decay.

    RoPE in `layout` (default "half"; the authors' code interleaves), with rotation pair j of both
    q and k scaled: q at position n by zeta_j^(n / scale_base), k at position m by
    zeta_j^(-m / scale_base), zeta_j = (2j / K + gamma) / (1 + gamma). Then q.k carries
    zeta_j^((n - m) / scale_base): it decays with distance for keys in the past (n >= m) and grows
    for keys in the future, so the method is meant for causal models. Powers are taken relative to
    a centre shared by q and k (the midpoint of the positions), which cancels in q.k but keeps the
    float32 scales near 1.
    """

    name = "xpos"
    needs_increasing_positions = True
    base: float = 10000.0
    gamma: float = 0.4
    scale_base: float = 512.0
    layout: Literal["half", "interleaved"] = "half"

    def check(self, dims: Dims, max_position: int) -> None:
        _check_layout(self.layout)
        check_even("head_dim for xpos", dims.head_dim, "choose d_model / num_heads even.")
        check_positive("xpos base", self.base)
        check_positive("xpos gamma", self.gamma)
        check_positive("xpos scale_base", self.scale_base)

    def _decay(self, pos_BL: jax.Array, centre: jax.Array, zeta_K: jax.Array, sign: float):
        power_BL = sign * (pos_BL.astype(jnp.float32) - centre) / self.scale_base
        return zeta_K[None, None, None, :] ** power_BL[:, :, None, None]

    def rotate(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        qpos_BL, kpos_BM = jnp.atleast_2d(qpos_BL), jnp.atleast_2d(kpos_BM)
        K = q_BLHK.shape[-1]
        inv_freq_J, _ = rope_frequencies(K, base=self.base)
        zeta_J = (jnp.arange(0, K, 2, dtype=jnp.float32) / K + self.gamma) / (1.0 + self.gamma)
        # Components of one rotation pair share a scale, laid out as the pairs are.
        zeta_K = jnp.concatenate([zeta_J, zeta_J]) if self.layout == "half" else zeta_J.repeat(2)
        lo = jnp.minimum(jnp.min(qpos_BL), jnp.min(kpos_BM)).astype(jnp.float32)
        hi = jnp.maximum(jnp.max(qpos_BL), jnp.max(kpos_BM)).astype(jnp.float32)
        centre = (lo + hi) / 2
        q32 = apply_rope(q_BLHK.astype(jnp.float32), qpos_BL, inv_freq_J, layout=self.layout)
        k32 = apply_rope(k_BMHK.astype(jnp.float32), kpos_BM, inv_freq_J, layout=self.layout)
        q32 = q32 * self._decay(qpos_BL, centre, zeta_K, 1.0)
        k32 = k32 * self._decay(kpos_BM, centre, zeta_K, -1.0)
        return q32.astype(q_BLHK.dtype), k32.astype(k_BMHK.dtype)
