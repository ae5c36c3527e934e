"""RoPE frequency scaling for context extension, in the `rope_scaling` convention of Llama-family
model configs: linear (position interpolation), ntk, dynamic (NTK), yarn, llama3 and longrope.

The formulas follow the published methods and their common implementations' conventions;
`RopeScaling` is frozen so an encoding holding one stays hashable. Newer Hugging Face configs call
the same dict `rope_parameters` and may add `rope_theta` (our `base`), `partial_rotary_factor`
(our `fraction`) and `rope_type: "default"` (no scaling): `split_rope_parameters` reads that form.
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
    "longrope": (
        ("factor", "original_max_position_embeddings", "short_factor", "long_factor"),
        ("attention_factor",),
    ),
}
# Keys of a `rope_parameters` dict that are RoPE hyper-parameters rather than scaling keys, with
# the RoPE field each one names.
ROPE_PARAMETER_FIELDS = {"rope_theta": "base", "partial_rotary_factor": "fraction"}


def _scaling_types() -> str:
    return "; ".join(
        f"{t} (needs {', '.join(req)}" + (f"; optional {', '.join(opt)})" if opt else ")")
        for t, (req, opt) in SCALING_KEYS.items()
    )


@dataclasses.dataclass(frozen=True)
class RopeScaling:
    """A `rope_scaling` entry of a Llama-family config, frozen so RoPE stays hashable.

    Unset keys are None and take the defaults of the method (yarn: beta_fast 32, beta_slow 1,
    truncate True, attention factor 0.1 ln(factor) + 1; longrope: attention factor
    sqrt(1 + ln(factor) / ln(original_max_position_embeddings))). Unlike Hugging Face configs there
    is no model `max_position_embeddings`, so `original_max_position_embeddings` is required
    wherever a method needs a length, and yarn and longrope use `factor` as given (Hugging Face
    derives longrope's factor from max_position_embeddings / original_max_position_embeddings when
    the config has both). `short_factor` and `long_factor` hold one rescale factor per rotation
    pair (head_dim * fraction / 2 of them), as tuples so that the entry stays hashable.
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
    short_factor: tuple[float, ...] | None = None
    long_factor: tuple[float, ...] | None = None

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
            if value is not None and key in _PER_PAIR:
                object.__setattr__(self, key, _per_pair(self.rope_type, key, value))
            elif value is not None and key != "truncate":
                # Users write 4 or 4.0: one numeric type per key keeps labels and JSON alike.
                cast = int if key == "original_max_position_embeddings" else float
                object.__setattr__(self, key, cast(value))
        check_positive("rope_scaling factor", self.factor)
        if self.original_max_position_embeddings is not None:
            check_positive(
                "rope_scaling original_max_position_embeddings",
                self.original_max_position_embeddings,
            )
        if (
            self.rope_type == "longrope"
            and self.attention_factor is None
            and self.factor > 1
            and self.original_max_position_embeddings < 2
        ):
            raise ValueError(
                "longrope's default attention factor sqrt(1 + ln(factor) / ln(original_max_"
                "position_embeddings)) needs original_max_position_embeddings >= 2, got "
                f"{self.original_max_position_embeddings}: raise it or set attention_factor."
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
_PER_PAIR = ("short_factor", "long_factor")


def _per_pair(rope_type: str, key: str, value: Any) -> tuple[float, ...]:
    """A per-pair factor list as a tuple of positive floats (JSON gives lists)."""
    if isinstance(value, str) or not hasattr(value, "__len__"):
        raise ValueError(
            f"rope_scaling of type {rope_type!r} needs {key!r} as a list of numbers, one per "
            f"rotation pair, got {value!r}."
        )
    factors = tuple(float(v) for v in value)
    if not all(f > 0 for f in factors):
        raise ValueError(
            f"rope_scaling {key!r} must hold positive factors (each divides a frequency), "
            f"got {list(factors)}."
        )
    return factors


def split_rope_parameters(
    d: dict[str, Any], name: str = "rope_parameters"
) -> tuple[RopeScaling | None, dict[str, float]]:
    """A `rope_scaling` or `rope_parameters` dict -> (its scaling or None, the RoPE fields it sets).

    Besides the scaling keys it may hold `rope_theta` (-> base) and `partial_rotary_factor`
    (-> fraction), and `rope_type` may be "default" (RoPE without scaling), as in newer Hugging
    Face configs. `name` is the option the dict came from, for messages. An unknown key is an
    error naming the known ones.
    """
    if isinstance(d, RopeScaling):
        return d, {}
    if not isinstance(d, dict):
        raise ValueError(f"{name} must be a dict, got {type(d).__name__}: {d!r}.")
    d = dict(d)
    fields = {
        ROPE_PARAMETER_FIELDS[k]: float(d.pop(k)) for k in list(d) if k in ROPE_PARAMETER_FIELDS
    }
    if d.get("rope_type") == "default":
        extra = sorted(set(d) - {"rope_type"})
        if extra:
            raise ValueError(
                f"{name} of rope_type 'default' (no scaling) has scaling key(s) {extra}: remove "
                f"them, or name a scaling type ({', '.join(SCALING_KEYS)})."
            )
        return None, fields
    unknown = sorted(set(d) - {"rope_type", *_SCALING_FIELDS})
    if unknown:
        hint = " (older configs call rope_type 'type')" if "type" in unknown else ""
        raise ValueError(
            f"{name} has unknown key(s) {unknown}{hint}; known keys: rope_type, "
            f"{', '.join(ROPE_PARAMETER_FIELDS)}, {', '.join(_SCALING_FIELDS)}."
        )
    return RopeScaling.from_dict(d), fields


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
    if s.rope_type == "longrope":
        return _longrope(inv_freq_J, dim, s, seq_len)
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


def _longrope(
    inv_freq_J: jax.Array, dim: int, s: RopeScaling, seq_len: jax.Array | int | None
) -> tuple[jax.Array, float]:
    """LongRoPE (Ding et al., 2024, arXiv 2402.13753): every frequency divided by its own factor,
    `long_factor` once the sequence (largest key position + 1) exceeds the original context,
    `short_factor` otherwise (and when the length is unknown)."""
    J = dim // 2
    for key in _PER_PAIR:
        n = len(getattr(s, key))
        if n != J:
            raise ValueError(
                f"longrope {key} has {n} factors but the rotated part of a head (head_dim * "
                f"fraction = {dim} components) has {J} rotation pairs: give one factor per pair."
            )
    short_J = jnp.asarray(s.short_factor, jnp.float32)
    long_J = jnp.asarray(s.long_factor, jnp.float32)
    if seq_len is None:
        ext_J = short_J
    else:
        beyond = jnp.asarray(seq_len) > s.original_max_position_embeddings
        ext_J = jnp.where(beyond, long_J, short_J)
    if s.attention_factor is not None:
        scale = s.attention_factor
    elif s.factor <= 1.0:
        scale = 1.0
    else:
        scale = math.sqrt(1.0 + math.log(s.factor) / math.log(s.original_max_position_embeddings))
    return inv_freq_J / ext_J, float(scale)
