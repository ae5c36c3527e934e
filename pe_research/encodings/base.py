"""The hook protocol every positional encoding implements.

The model calls every hook of whatever encoding it holds and never asks which one it has:

    init_embed(key, dims)                          -> top-level params (embedding, shared by layers)
    init_layer(key, dims)                          -> params of one attention layer
    embed(params, x_BLD, pos_BL)                   -> x_BLD        (after the token embedding)
    rotate(params, q_BLHK, k_BMHK, qpos, kpos)     -> q_BLHK, k_BMHK (in every attention layer)
    bias(params, q_BLHK, k_BMHK, qpos, kpos)       -> bias added to logits_BHLM (broadcastable)
    for_layer(layer, num_layers)                   -> the encoding attention layer `layer` uses

Each hook is a no-op by default, so an encoding overrides only what it uses. Hooks are pure
functions of their arguments and the encoding's (frozen, hashable) hyper-parameters, so an encoding
can be a static argument under `jax.jit`. Positions are integer arrays given explicitly by the
caller; `pos_BL` may carry a trailing axis for n-D encodings.

`for_layer` is asked once per layer when the model is built: an encoding is its own encoding in
every layer, and a per-layer mixture (mixture.py) answers with one of its members. The embedding
hooks stay the top-level encoding's.

Parameters: `embed` gets the top-level parameters (init_embed); `rotate` and `bias` get the
layer's own (init_layer) merged with the top-level ones, so a parameter that every layer shares
lives in init_embed (T5's one relative-bias table, `t5 shared=True`). The two must not use the
same name (the model refuses a clash).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

Params = dict[str, jax.Array]


@dataclasses.dataclass(frozen=True)
class Dims:
    """The model sizes an encoding may need to build its parameters or check itself."""

    d_model: int
    num_heads: int
    head_dim: int
    causal: bool = True
    logits_scaled: bool = True
    """Whether the model divides q.k by sqrt(head_dim) before a bias adds to it (ModelConfig
    qk_scale)."""


@dataclasses.dataclass(frozen=True)
class Encoding:
    """Base class: every hook is a no-op. Subclasses are frozen dataclasses of hyper-parameters."""

    name: ClassVar[str] = "base"
    # Whether position information is learned (Pr4 of the essay) rather than a fixed function.
    learned: ClassVar[bool] = False
    # None: positions are pos_BL. An int A: positions are pos_BLA, A coordinates per token.
    position_axes: ClassVar[int | None] = None
    # Whether a causal model's key at a larger position than its query reads as a key in the
    # future (T5's unidirectional buckets, xPos's decay): such an encoding needs positions
    # strictly increasing over the tokens, which the `coupled` sampler does not give.
    needs_increasing_positions: ClassVar[bool] = False
    # Hyper-parameters the hooks read only as numbers (never as a shape or in a Python branch):
    # runs that differ only in them train as one vmapped program, and inside it they are traced
    # float32 arrays (training.hyperparameters). Empty: every hyper-parameter is a shape.
    packable: ClassVar[tuple[str, ...]] = ()

    def check(self, dims: Dims, max_position: int) -> None:
        """Raise ValueError, naming the constraint, if this encoding cannot serve these sizes.

        `max_position` is the largest position the run will feed (training and evaluation).
        """

    def packable_fields(self) -> tuple[str, ...]:
        """The `packable` hyper-parameters of this instance (some settings may rule them out)."""
        return self.packable

    def init_embed(self, key: jax.Array, dims: Dims) -> Params:
        return {}

    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        return {}

    def embed(self, params: Params, x_BLD: jax.Array, pos_BL: jax.Array) -> jax.Array:
        return x_BLD

    def rotate(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        return q_BLHK, k_BMHK

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        # A float32 scalar broadcasts against logits_BHLM and is folded away by XLA.
        return jnp.zeros((), jnp.float32)

    def for_layer(self, layer: int, num_layers: int) -> Encoding:
        """The encoding whose init_layer, rotate and bias serve attention layer `layer` (0-based)
        of `num_layers`."""
        return self

    # -- description ---------------------------------------------------------------------------

    def hyperparameters(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def label(self) -> str:
        """Short name for tables and legends: the name plus every non-default hyper-parameter."""
        changed = [
            f"{f.name}={_fmt(getattr(self, f.name))}"
            for f in dataclasses.fields(self)
            if f.default is not dataclasses.MISSING and getattr(self, f.name) != f.default
        ]
        return f"{self.name}({', '.join(changed)})" if changed else self.name


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def check_positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}.")


def require_scaled_logits(name: str, dims: Dims) -> None:
    """For encodings whose hooks compute q.k products themselves, scaled by 1/sqrt(head_dim) as
    the model's default logits are: under ModelConfig qk_scale 'init' the model's q.k is unscaled
    and theirs would not match it."""
    if not dims.logits_scaled:
        raise ValueError(
            f"{name} computes its own q.k / sqrt(head_dim), which model qk_scale 'init' (q.k "
            f"unscaled, W_q drawn smaller) does not match: use qk_scale 'logits' (the default) "
            f"with {name}."
        )


def check_even(what: str, value: int, hint: str) -> None:
    if value % 2:
        raise ValueError(f"{what} must be even, got {value}: {hint}")
