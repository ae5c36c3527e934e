"""Per-layer mixtures: one encoding per attention layer, through the `for_layer` hook.

The model asks `encoding.for_layer(i, num_layers)` once per layer and builds that layer's
attention with the answer; a mixture answers with one of its members, so the model still never
asks which encoding it has. Hybrids of this kind interleave RoPE layers with NoPE layers: Yang et
al., 2025, "Rope to Nope and Back Again: A New Hybrid Attention Strategy" (arXiv 2501.18795), one
NoPE layer in four, as Llama 4 and Command A do.

Conventions:
- The embedding hooks (init_embed, embed) are the top-level encoding's, and a mixture has none:
  `check` refuses members with an embedding hook (sinusoidal, learned, ...), since they would
  add their vectors to the residual stream of every layer, not of their own, and members with
  top-level parameters (t5 shared=True), which a mixture would not create.
- Called directly (a single layer probed alone, as the property report and the dog-sentence
  demonstration do), a mixture's hooks are those of its layer-0 member.
- Every member takes the same positions: members must agree on `position_axes`.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable
from typing import ClassVar

import jax

from pe_research.encodings.absolute import NoPE
from pe_research.encodings.base import Dims, Encoding, Params, check_positive
from pe_research.encodings.rotary import RoPE


@dataclasses.dataclass(frozen=True)
class LayerMixture(Encoding, abc.ABC):
    """Base of per-layer mixtures: subclasses say which member serves each layer (`member`)."""

    name = "layer_mixture"

    @abc.abstractmethod
    def member(self, layer: int) -> Encoding:
        """The encoding of attention layer `layer` (0-based)."""

    @abc.abstractmethod
    def members(self) -> tuple[Encoding, ...]:
        """The distinct members, in the order of the layers that first use them."""

    def for_layer(self, layer: int, num_layers: int) -> Encoding:
        return self.member(layer)

    @property
    def position_axes(self) -> int | None:  # type: ignore[override]
        return self.member(0).position_axes

    @property
    def learned(self) -> bool:  # type: ignore[override]
        return any(m.learned for m in self.members())

    def check(self, dims: Dims, max_position: int) -> None:
        members = self.members()
        for m in members:
            if isinstance(m, LayerMixture):
                raise ValueError(
                    f"{self.name}: member {m.label()!r} is itself a per-layer mixture; list its "
                    "members in this mixture's layers instead."
                )
            # Shapes only: whether the member keeps top-level parameters (t5 shared=True does).
            top_level = jax.eval_shape(lambda m=m: m.init_embed(jax.random.key(0), dims))
            if type(m).embed is not Encoding.embed or top_level:
                raise ValueError(
                    f"{self.name}: member {m.label()!r} adds its vectors to the token embedding "
                    "or keeps parameters that every layer shares, so it cannot serve some layers "
                    "only: mix encodings that act in attention with per-layer parameters (rotate "
                    "or bias), such as rope, nope, alibi, t5."
                )
        axes = {m.name: m.position_axes for m in members}
        if len(set(axes.values())) > 1:
            raise ValueError(
                f"{self.name}: members need different positions ({axes}; None is 1-D pos_BL, A is "
                "pos_BLA): every layer gets the same positions, so mix members of one kind."
            )
        for m in members:
            m.check(dims, max_position)

    # A single layer probed alone is layer 0.
    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        return self.member(0).init_layer(key, dims)

    def rotate(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        return self.member(0).rotate(params, q_BLHK, k_BMHK, qpos_BL, kpos_BM)

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        return self.member(0).bias(params, q_BLHK, k_BMHK, qpos_BL, kpos_BM)


@dataclasses.dataclass(frozen=True)
class Mixture(LayerMixture):
    """Layer i uses the encoding named pattern[i % len(pattern)], at its default hyper-parameters.

    The pattern is cycled over the layers: ("rope", "rope", "rope", "nope") on 8 layers puts NoPE
    in layers 3 and 7 (0-based). A model with fewer layers than the pattern uses only its first
    entries (a 2-layer model with that pattern is all RoPE). Members with other hyper-parameters
    need a mixture class of their own, as `rnope` is for RoPE's base.
    """

    name = "mixture"
    pattern: tuple[str, ...] = ("rope", "nope")
    # Name -> encoding class: the registry of pe_research.encodings, bound there once it is built
    # (the registry lists Mixture, so neither can be defined before the other).
    catalog: ClassVar[Callable[[], dict[str, type[Encoding]]]]

    def __post_init__(self) -> None:
        # A list read from JSON or a command line becomes a tuple: the encoding stays hashable.
        object.__setattr__(self, "pattern", tuple(self.pattern))

    def check(self, dims: Dims, max_position: int) -> None:
        self._check_pattern()
        super().check(dims, max_position)

    def _check_pattern(self) -> None:
        if not self.pattern:
            raise ValueError(
                "mixture pattern is empty: name one encoding per layer, for example "
                "--pattern rope rope rope nope (after the encoding name mixture)."
            )

    def member(self, layer: int) -> Encoding:
        self._check_pattern()  # even when asked before check: no bare ZeroDivisionError
        name = self.pattern[layer % len(self.pattern)]
        known = self.catalog()
        if name not in known:
            raise ValueError(
                f"mixture pattern names unknown encoding {name!r}. Known encodings: "
                f"{', '.join(known)}."
            )
        return known[name]()

    def members(self) -> tuple[Encoding, ...]:
        return tuple(self.member(self.pattern.index(n)) for n in dict.fromkeys(self.pattern))

    def label(self) -> str:
        return f"{self.name}({','.join(self.pattern)})"


@dataclasses.dataclass(frozen=True)
class RNoPE(LayerMixture):
    """RoPE with a NoPE layer every `nope_every`-th layer: layer i (0-based) is NoPE when
    (i + 1) % nope_every == 0, so the default puts NoPE in layers 3, 7, 11, ... (Yang et al.,
    2025, arXiv 2501.18795; the placement of Llama 4's no-RoPE layers). RoPE layers use `base`
    and the half-split layout. A model with fewer than `nope_every` layers is all RoPE.
    """

    name = "rnope"
    nope_every: int = 4
    base: float = 10000.0

    def check(self, dims: Dims, max_position: int) -> None:
        if self.nope_every < 1:
            raise ValueError(
                f"rnope nope_every must be >= 1 (1: every layer NoPE), got {self.nope_every}."
            )
        check_positive("rnope base", self.base)
        super().check(dims, max_position)

    def member(self, layer: int) -> Encoding:
        return NoPE() if (layer + 1) % self.nope_every == 0 else RoPE(base=self.base)

    def members(self) -> tuple[Encoding, ...]:
        return (RoPE(base=self.base), NoPE()) if self.nope_every > 1 else (NoPE(),)
