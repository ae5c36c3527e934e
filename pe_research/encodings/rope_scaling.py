"""RoPE frequency scaling for context extension, in the `rope_scaling` convention of Llama-family
model configs: linear (position interpolation), ntk, dynamic (NTK), yarn and llama3.

The formulas follow the published methods and their common implementations' conventions;
`RopeScaling` is frozen so an encoding holding one stays hashable.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp

from pe_research.encodings.base import check_positive

# rope_type -> (required keys, optional keys), besides rope_type itself.
SCALING_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "linear": (("factor",), ()),
    "ntk": (("factor",), ()),
    "dynamic": (("factor", "original_max_position_embeddings"), ()),
    "yarn": (
        ("factor", "original_max_position_embeddings"),
        ("beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim", "truncate"),
    ),
    "llama3": (
        ("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
        (),
    ),
}


def _scaling_types() -> str:
    return "; ".join(
        f"{t} (needs {', '.join(req)}" + (f"; optional {', '.join(opt)})" if opt else ")")
        for t, (req, opt) in SCALING_KEYS.items()
    )


@dataclasses.dataclass(frozen=True)
class RopeScaling:
    """A `rope_scaling` entry of a Llama-family config, frozen so RoPE stays hashable.

    Unset keys are None and take the defaults of the method (yarn: beta_fast 32, beta_slow 1,
    truncate True, attention factor 0.1 ln(factor) + 1). Unlike Hugging Face configs there is no
    model `max_position_embeddings`, so `original_max_position_embeddings` is required wherever a
    method needs a length, and yarn uses `factor` as given.
    """

    rope_type: str
    factor: float | None = None
    original_max_position_embeddings: int | None = None
    low_freq_factor: float | None = None
    high_freq_factor: float | None = None
    beta_fast: float | None = None
    beta_slow: float | None = None
    attention_factor: float | None = None
    mscale: float | None = None
    mscale_all_dim: float | None = None
    truncate: bool | None = None

    def __post_init__(self):
        if self.rope_type not in SCALING_KEYS:
            raise ValueError(
                f"Unknown rope_type {self.rope_type!r}. Known types: {_scaling_types()}."
            )
        required, optional = SCALING_KEYS[self.rope_type]
        for key in _SCALING_FIELDS:
            value = getattr(self, key)
            if key in required and value is None:
                raise ValueError(
                    f"rope_scaling of type {self.rope_type!r} is missing key {key!r}; "
                    f"add it (this type needs {', '.join(required)})."
                )
            if key not in required + optional and value is not None:
                raise ValueError(
                    f"rope_scaling of type {self.rope_type!r} does not use key {key!r}; "
                    f"it takes {', '.join(required + optional)}. Remove {key!r}."
                )
            if value is not None and key != "truncate":
                # Users write 4 or 4.0: one numeric type per key keeps labels and JSON alike.
                cast = int if key == "original_max_position_embeddings" else float
                object.__setattr__(self, key, cast(value))
        check_positive("rope_scaling factor", self.factor)
        if self.original_max_position_embeddings is not None:
            check_positive(
                "rope_scaling original_max_position_embeddings",
                self.original_max_position_embeddings,
            )
        if self.rope_type == "llama3" and not self.high_freq_factor > self.low_freq_factor:
            raise ValueError(
                f"llama3 rope_scaling needs high_freq_factor > low_freq_factor, got "
                f"{self.high_freq_factor} and {self.low_freq_factor}."
            )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RopeScaling:
        """The dict form of Llama-family configs; ValueError names a missing or unknown key."""
        if "rope_type" not in d:
            raise ValueError(
                f"rope_scaling {d} has no 'rope_type'; choose one of: {_scaling_types()}."
            )
        unknown = sorted(set(d) - {"rope_type", *_SCALING_FIELDS})
        if unknown:
            hint = " (older configs call rope_type 'type')" if "type" in unknown else ""
            raise ValueError(
                f"rope_scaling has unknown key(s) {unknown}{hint}; known keys: "
                f"rope_type, {', '.join(_SCALING_FIELDS)}."
            )
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        """The set keys only, as a Llama-family config writes them."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    def __str__(self) -> str:
        d = self.to_dict()
        kind = d.pop("rope_type")
        args = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in d.items())
        return f"{kind}({args})"


_SCALING_FIELDS = tuple(f.name for f in dataclasses.fields(RopeScaling) if f.name != "rope_type")


def as_scaling(scaling: RopeScaling | dict[str, Any] | None) -> RopeScaling | None:
    """Accept a RopeScaling, its dict form, or None."""
    if scaling is None or isinstance(scaling, RopeScaling):
        return scaling
    if isinstance(scaling, dict):
        return RopeScaling.from_dict(scaling)
    raise ValueError(f"rope scaling must be a dict or RopeScaling, got {type(scaling).__name__}.")


def _yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def scaled_inv_freq(
    base: float, dim: int, s: RopeScaling, seq_len: jax.Array | int | None
) -> tuple[jax.Array, float]:
    """Inverse frequencies of a `dim`-component rotation under scaling `s` (Hugging Face rules)."""
    j_J = jnp.arange(dim // 2, dtype=jnp.float32)
    exponent_J = -2.0 * j_J / dim
    inv_freq_J = jnp.asarray(base, jnp.float32) ** exponent_J
    factor = s.factor
    if s.rope_type in ("ntk", "dynamic") and dim <= 2:
        raise ValueError(
            f"{s.rope_type} rope scaling rescales the base by a power dim/(dim-2) and needs more "
            f"than 2 rotated components, got {dim}: raise head_dim or the rotary fraction."
        )
    if s.rope_type == "linear":  # position interpolation (Chen et al., 2023)
        return inv_freq_J / factor, 1.0
    if s.rope_type == "ntk":
        new_base = base * factor ** (dim / (dim - 2))
        return jnp.asarray(new_base, jnp.float32) ** exponent_J, 1.0
    if s.rope_type == "dynamic":
        if seq_len is None:
            return inv_freq_J, 1.0
        orig = s.original_max_position_embeddings
        length = jnp.asarray(seq_len, jnp.float32)
        stretch = jnp.where(length > orig, factor * length / orig - (factor - 1.0), 1.0)
        new_base = jnp.asarray(base, jnp.float32) * stretch ** (dim / (dim - 2))
        return new_base**exponent_J, 1.0
    if s.rope_type == "llama3":
        orig = s.original_max_position_embeddings
        wavelen_J = 2 * math.pi / inv_freq_J
        long_wavelen = orig / s.low_freq_factor
        short_wavelen = orig / s.high_freq_factor
        smooth_J = (orig / wavelen_J - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor)
        mixed_J = ((1 - smooth_J) / factor + smooth_J) * inv_freq_J
        out_J = jnp.where(wavelen_J > long_wavelen, inv_freq_J / factor, mixed_J)
        return jnp.where(wavelen_J < short_wavelen, inv_freq_J, out_J), 1.0
    # yarn (Peng et al., 2023, "YaRN"): interpolate the low frequencies, extrapolate the high ones,
    # ramping linearly between the dims whose frequency turns beta_fast and beta_slow times over
    # the original context.
    beta_fast = s.beta_fast or 32.0
    beta_slow = s.beta_slow or 1.0
    orig = s.original_max_position_embeddings

    def dim_of(rotations: float) -> float:
        return dim * math.log(orig / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = dim_of(beta_fast), dim_of(beta_slow)
    if s.truncate is None or s.truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    extrapolate_J = 1.0 - jnp.clip((j_J - low) / (high - low), 0.0, 1.0)
    inv_freq_J = inv_freq_J / factor * (1.0 - extrapolate_J) + inv_freq_J * extrapolate_J
    if s.attention_factor is not None:
        scale = s.attention_factor
    elif s.mscale and s.mscale_all_dim:
        scale = _yarn_mscale(factor, s.mscale) / _yarn_mscale(factor, s.mscale_all_dim)
    else:
        scale = _yarn_mscale(factor)
    return inv_freq_J, float(scale)
