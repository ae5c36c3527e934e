"""Position samplers: how positions are chosen, independent of how they are encoded.

A sampler is a frozen dataclass with `sample(key, valid_BL) -> pos_BL` (int32) and
`max_position(width)`, the largest position it can emit for a batch of that width, which the
run checks against encodings with a finite table. Padding positions get position 0; the model
masks them out as keys, and in a causal model no real token attends to them.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class Contiguous:
    """0, 1, 2, ...: the usual positions, the same for training and evaluation."""

    name: ClassVar[str] = "contiguous"

    def sample(self, key: jax.Array, valid_BL: jax.Array) -> jax.Array:
        pos_1L = jnp.arange(valid_BL.shape[1], dtype=jnp.int32)[None, :]
        return jnp.where(valid_BL, pos_1L, 0)

    def max_position(self, width: int) -> int:
        return width - 1


_REGISTRY = {cls.name: cls for cls in (Contiguous,)}


def names() -> list[str]:
    return list(_REGISTRY)


def get(name: str, **options) -> Contiguous:
    """The sampler `name`; ValueError lists the known samplers."""
    if name not in _REGISTRY:
        raise ValueError(f"Unknown position sampler {name!r}. Known samplers: {', '.join(names())}.")
    return _REGISTRY[name](**options)


def to_dict(sampler) -> dict:
    return {"name": sampler.name, **dataclasses.asdict(sampler)}


def from_dict(d: dict) -> Contiguous:
    d = dict(d)
    return get(d.pop("name"), **d)
