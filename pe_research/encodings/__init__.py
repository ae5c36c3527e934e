"""The encoding registry and the public functional API.

    names() -> list[str]                   registered encoding names
    get(name, **hyperparameters)           an encoding instance (ValueError lists known names)
    to_dict(encoding) / from_dict(d)       the form stored in config.json ({"name": ..., ...})

Adding an encoding: one frozen dataclass in its family module, one line in `_REGISTRY`, and its
property tests. The model does not change.
"""

from __future__ import annotations

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
from pe_research.encodings.bias import ALiBi, Kerple, T5Bias, alibi_slopes, t5_relative_bucket
from pe_research.encodings.contextual import CoPE, ForgettingGate
from pe_research.encodings.dape import DAPE
from pe_research.encodings.fourier import FoPE
from pe_research.encodings.learned_bias import FIRE, TransformerXL
from pe_research.encodings.learned_rotation import ComRoPE, LieRE
from pe_research.encodings.mixture import Mixture, RNoPE
from pe_research.encodings.mrope import MRoPE
from pe_research.encodings.path import PaTH
from pe_research.encodings.polar import PoPE
from pe_research.encodings.rope_scaling import RopeScaling
from pe_research.encodings.rotary import HoPE, RoPE, RoPEND, XPos, apply_rope, rope_frequencies
from pe_research.encodings.temperature import NAPE, Temperature
from pe_research.registry import Registry

_REGISTRY: Registry[Encoding] = Registry(
    "encoding",
    "hyper-parameter",
    (
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
        MRoPE,
        HoPE,
        ForgettingGate,
        Mixture,
        RNoPE,
        LieRE,
        ComRoPE,
        FoPE,
        PoPE,
        DAPE,
        PaTH,
        Temperature,
        NAPE,
    ),
)
# Mixtures name their members by registry name.
Mixture.catalog = _REGISTRY.classes
names = _REGISTRY.names
classes = _REGISTRY.classes
get = _REGISTRY.get
from_dict = _REGISTRY.from_dict


def to_dict(encoding: Encoding) -> dict[str, Any]:
    return {"name": encoding.name, **encoding.hyperparameters()}


__all__ = [
    "DAPE",
    "FIRE",
    "NAPE",
    "ALiBi",
    "Binary",
    "CoPE",
    "ComRoPE",
    "Dims",
    "Encoding",
    "FoPE",
    "ForgettingGate",
    "HoPE",
    "Integer",
    "Kerple",
    "LearnedAbsolute",
    "MRoPE",
    "Mixture",
    "LieRE",
    "NoPE",
    "NormalizedInteger",
    "PaTH",
    "PoPE",
    "RNoPE",
    "RoPE",
    "RoPEND",
    "RopeScaling",
    "Sinusoidal",
    "T5Bias",
    "Temperature",
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
