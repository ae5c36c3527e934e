"""The encoding registry and the public functional API.

    names() -> list[str]                   registered encoding names
    get(name, **hyperparameters)           an encoding instance (ValueError lists known names)
    to_dict(encoding) / from_dict(d)       the form stored in config.json ({"name": ..., ...})

Adding an encoding: one frozen dataclass in its family module, one line in `_REGISTRY`, and its
property tests. The model does not change.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pe_research.encodings.absolute import (
    Binary,
    Integer,
    LearnedAbsolute,
    NoPE,
    NormalizedInteger,
    Sinusoidal,
    binary_table,
    sinusoidal_table,
)
from pe_research.encodings.base import Dims, Encoding
from pe_research.encodings.bias import (
    FIRE,
    ALiBi,
    Kerple,
    T5Bias,
    TransformerXL,
    alibi_slopes,
    t5_relative_bucket,
)
from pe_research.encodings.contextual import CoPE
from pe_research.encodings.rope_scaling import RopeScaling
from pe_research.encodings.rotary import RoPE, RoPEND, XPos, apply_rope, rope_frequencies

_REGISTRY: dict[str, type[Encoding]] = {
    cls.name: cls
    for cls in (
        # the seed essay's sequence
        NoPE,
        Integer,
        NormalizedInteger,
        Binary,
        Sinusoidal,
        LearnedAbsolute,
        RoPE,
        RoPEND,
        # from the field
        XPos,
        ALiBi,
        T5Bias,
        Kerple,
        FIRE,
        TransformerXL,
        CoPE,
    )
}


def names() -> list[str]:
    """Registered encoding names, in registry order."""
    return list(_REGISTRY)


def classes() -> dict[str, type[Encoding]]:
    """Name -> encoding class (for building CLIs and docs)."""
    return dict(_REGISTRY)


def get(name: str, **hyperparameters: Any) -> Encoding:
    """The encoding `name` with the given hyper-parameters (defaults for the rest)."""
    if name not in _REGISTRY:
        raise ValueError(f"Unknown encoding {name!r}. Known encodings: {', '.join(names())}.")
    cls = _REGISTRY[name]
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(hyperparameters) - known)
    if unknown:
        raise ValueError(
            f"Encoding {name!r} has no hyper-parameter(s) {unknown}; "
            f"it takes: {sorted(known) or 'none'}."
        )
    return cls(**hyperparameters)


def to_dict(encoding: Encoding) -> dict[str, Any]:
    return {"name": encoding.name, **encoding.hyperparameters()}


def from_dict(d: dict[str, Any]) -> Encoding:
    d = dict(d)
    if "name" not in d:
        raise ValueError(f"An encoding entry needs a 'name' key, got {d}.")
    return get(d.pop("name"), **d)


__all__ = [
    "FIRE",
    "ALiBi",
    "Binary",
    "CoPE",
    "Dims",
    "Encoding",
    "Integer",
    "Kerple",
    "LearnedAbsolute",
    "NoPE",
    "NormalizedInteger",
    "RoPE",
    "RoPEND",
    "RopeScaling",
    "Sinusoidal",
    "T5Bias",
    "TransformerXL",
    "XPos",
    "alibi_slopes",
    "apply_rope",
    "binary_table",
    "classes",
    "from_dict",
    "get",
    "names",
    "rope_frequencies",
    "sinusoidal_table",
    "t5_relative_bucket",
    "to_dict",
]
