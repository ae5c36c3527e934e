"""Hyper-parameters that are numbers, not shapes: runs that differ only in them train as one
vmapped program, each packed model with its own values.

A packable value enters the compiled programs as a float32 array with one entry per packed
model, never as a constant: the optimizer settings `TRAIN` (learning rate, weight decay, clipping
norm) and each encoding's `packable_fields()` (RoPE's base and p-RoPE's p, realised as a mask
over frequencies). Everything else (widths, depth, vocabulary, lengths, buckets, steps, layouts,
scalings, which encoding) is a shape or a branch of the program: runs that differ in it train
apart, and `differences` names it so the sweep can say why.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pe_research.config import RunConfig, TrainConfig

TRAIN = ("learning_rate", "weight_decay", "grad_clip")
"""TrainConfig fields that packed models may hold different values of."""

Values = dict[str, dict[str, Any]]
"""{"train": {field: value}, "encoding": {field: value}, "dropout": {"seed_hi", "seed_lo"}}:
floats, or arrays when traced. "dropout" is empty unless the model drops units."""


def _default(cls: type, name: str) -> Any:
    return next(f.default for f in dataclasses.fields(cls) if f.name == name)


def values(cfg: RunConfig) -> Values:
    """The packable numbers of one run. A model with dropout also gets its seed, in two 16-bit
    halves (exact in float32), from which the step derives its dropout keys (`dropout_key`):
    packed models differ in their seeds, so each drops its own units."""
    return {
        "train": {f: float(getattr(cfg.train, f)) for f in TRAIN},
        "encoding": {f: float(getattr(cfg.encoding, f)) for f in cfg.encoding.packable_fields()},
        "dropout": (
            {"seed_hi": float(cfg.seed >> 16), "seed_lo": float(cfg.seed & 0xFFFF)}
            if cfg.model.dropout
            else {}
        ),
    }


DROPOUT_STREAM = 3
"""Folded, after the seed, into key(0) for the dropout stream: a derivation apart from
`keys_from_seed`'s split of key(seed), so adding dropout shifts no other stream."""


def dropout_key(vals: Values, step: jax.Array) -> jax.Array | None:
    """The key of a training step's dropout, from the run's seed (in `vals`) and the step
    number; None for a model without dropout."""
    if not vals.get("dropout"):
        return None
    hi, lo = (jnp.asarray(vals["dropout"][h]).astype(jnp.uint32) for h in ("seed_hi", "seed_lo"))
    key = jax.random.fold_in(jax.random.key(0), hi << 16 | lo)
    return jax.random.fold_in(jax.random.fold_in(key, DROPOUT_STREAM), step)


def placeholder(cfg: RunConfig) -> RunConfig:
    """`cfg` with every packable number at its default: what the runs of a pack share. Programs
    are built from it and read each model's numbers from their `values`."""
    train = dataclasses.replace(cfg.train, **{f: _default(TrainConfig, f) for f in TRAIN})
    encoding = cfg.encoding
    fields = encoding.packable_fields()
    if fields:
        encoding = dataclasses.replace(encoding, **{f: _default(type(encoding), f) for f in fields})
    return dataclasses.replace(cfg, train=train, encoding=encoding)


def with_values(cfg: RunConfig, vals: Values) -> RunConfig:
    """`cfg` holding these (possibly traced) numbers; only hooks and the optimizer read it."""
    train = dataclasses.replace(cfg.train, **vals["train"])
    encoding = cfg.encoding
    if vals["encoding"]:
        encoding = dataclasses.replace(encoding, **vals["encoding"])
    return dataclasses.replace(cfg, train=train, encoding=encoding)


def stack(per_model: list[Values]) -> Values:
    """One float32 array per value, with a leading axis of models."""
    return jax.tree.map(lambda *xs: np.asarray(xs, np.float32), *per_model)


def is_traced(value: Any) -> bool:
    """Whether `value` is a traced array (a packed value inside a program), which a check must
    leave to the concrete run configs it came from."""
    return isinstance(value, jax.core.Tracer)


def differences(a: RunConfig, b: RunConfig) -> list[str]:
    """Dotted names of the fields in which two configs differ (for example `model.d_model`)."""

    def flat(cfg: RunConfig) -> dict[str, Any]:
        out: dict[str, Any] = {}

        def walk(prefix: str, value: Any) -> None:
            if isinstance(value, dict):
                for k, v in value.items():
                    walk(f"{prefix}.{k}" if prefix else k, v)
            else:
                out[prefix] = value

        walk("", cfg.to_dict())
        return out

    fa, fb = flat(a), flat(b)
    differ = {k for k in fa.keys() | fb.keys() if fa.get(k) != fb.get(k)}
    # Two different kinds (tasks offset and copy) differ in their name; the options of one
    # that the other lacks say nothing more.
    kinds = {k.removesuffix("name") for k in differ if k.endswith(".name")}
    return sorted(k for k in differ if not any(k.startswith(p) and k != p + "name" for p in kinds))
