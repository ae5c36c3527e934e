"""Learned rotary encodings: q and k rotated by R(p) = expm(sum_a p_a G_a), the G_a learned.

RoPE turns fixed planes by fixed angles per unit position. These encodings learn the generators
G_a, one per position axis, skew-symmetric so that every R(p) is a rotation (norms are kept).
LieRE (Ostmeier et al., 2024, arXiv 2406.10322) learns them freely; ComRoPE (Yu et al., 2025,
arXiv 2506.03737) constrains them to commute, which its paper proves is the condition for the
"RoPE equation" R(p)^T R(p') = R(p' - p): q.k then depends only on the position difference. With
one axis any generator commutes with itself, so both are relative in 1-D; in n-D only ComRoPE is.

Convention shared by both (as in both papers' code): the K components of a head form G = K / C
consecutive blocks of C = `block_size`, every generator is block diagonal, and R(p) turns each
block by the expm of a C x C skew-symmetric matrix. Generators are per layer and per head.
Letters beyond the package's key: G blocks per head; C and E the components of a block (rows,
columns). `axes=None` takes 1-D positions pos_BL; `axes=A` takes pos_BLA.

`init="rope"` (default) starts at RoPE's generators: pair (2j, 2j+1) of a head (the interleaved
layout) turns at base^(-2j/K); with A axes, axis a owns the a-th K/A components and turns them at
base^(-2j/(K/A)), as rope_nd. Before training the encoding then equals rope or rope_nd with
layout="interleaved". Both papers draw random generators (`init="normal"`: N(0, init_std^2)
entries) for positions scaled into [0, 1]; positions here are integers up to the thousands, where
random generators spread their angles at one fixed scale, so by default we start from RoPE's
spread of wavelengths and let training move the generators.

Cost. Blocks of 2 and 4 (the default) take closed forms (block_rotation.py): RoPE's cos/sin
for 2, and for 4 the split of so(4) into commuting self-dual and anti-self-dual parts, each
turned by Rodrigues' formula, so a token costs two 3-vector norms, four cos/sinc and two small
products, exact for any generators (LieRE in n-D too) and real positions; the coefficients come
from the generators once per step. Larger blocks fall back on expm: a scaling and squaring of a
degree-8 Taylor polynomial per token, or for commuting generators at integer positions the
products of tabulated expms of the positions' base-16 digits (block_rotation.py). Rounding grows
about as ||p G|| 2^-24, as RoPE's angles do; positions must stay below 2^24, where float32 stops
counting integers. A training step (scripts/encoding_cost.py: the default model, copy of 1-16
symbols at batch 64, 2-D on grid sides 1-4 at batch 32; 2 shared CPU cores, each version against
RoPE in the same process), before -> after the closed form, as a multiple
of RoPE's (rope_nd's in 2-D): liere 6.4x -> 1.7x, comrope 6.7x -> 1.9x, liere block 2 2.8x ->
1.1x, liere 2-D 104x -> 2.1x, comrope 2-D 36x -> 2.2x.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp

from pe_research.encodings.base import Dims, Encoding, Params, check_positive
from pe_research.encodings.block_rotation import (
    CLOSED_FORM_BLOCKS,
    DIGIT_BASE,
    DIGITS,
    block_rotations,
    commuting_rotations,
    rotate_blocks,
    rotate_closed_form,
    skew,
)
from pe_research.encodings.rotary import rope_frequencies

INITS = ("rope", "normal")
VARIANTS = ("ld", "ap")


def rope_generators(head_dim: int, axes: int, block_size: int, base: float) -> jax.Array:
    """gen_AGCE: RoPE's generators (interleaved pairs; axis a on the a-th head_dim / axes
    components, as rope_nd) cut into blocks of `block_size` along the diagonal."""
    K, A, C = head_dim, axes, block_size
    W = K // A
    inv_freq_J, _ = rope_frequencies(W, base=base)
    J = W // 2
    # Pair j of axis a sits at components (a W + 2j, a W + 2j + 1): G[c + 1, c] = theta_j and
    # G[c, c + 1] = -theta_j, so that expm(p G) turns (x_c, x_c+1) as apply_rope does.
    first_AJ = jnp.arange(A)[:, None] * W + 2 * jnp.arange(J)[None, :]
    axis_AJ = jnp.broadcast_to(jnp.arange(A)[:, None], (A, J))
    theta_AJ = jnp.broadcast_to(inv_freq_J[None, :], (A, J))
    gen_AKK = jnp.zeros((A, K, K), jnp.float32)
    gen_AKK = gen_AKK.at[axis_AJ, first_AJ + 1, first_AJ].set(theta_AJ)
    gen_AKK = gen_AKK.at[axis_AJ, first_AJ, first_AJ + 1].set(-theta_AJ)
    G = K // C
    return jnp.stack([gen_AKK[:, g * C : (g + 1) * C, g * C : (g + 1) * C] for g in range(G)], 1)


@dataclasses.dataclass(frozen=True)
class _BlockRotation(Encoding, abc.ABC):
    """Hyper-parameters, checks and the rotate hook shared by LieRE and ComRoPE; a subclass
    says how its parameters make the generators (`generators`) and how they start (`_init`)."""

    learned = True
    axes: int | None = None
    block_size: int = 4
    init: Literal["rope", "normal"] = "rope"
    base: float = 10000.0
    init_std: float = 0.02

    @property
    def position_axes(self) -> int | None:
        return self.axes

    @property
    def commuting(self) -> bool:
        """Whether the generators commute by construction (then R(p) factors over axes)."""
        return self.axes is None

    @property
    def num_axes(self) -> int:
        return 1 if self.axes is None else self.axes

    def check(self, dims: Dims, max_position: int) -> None:
        K, A, C = dims.head_dim, self.num_axes, self.block_size
        if self.axes is not None and (isinstance(self.axes, bool) or self.axes < 1):
            raise ValueError(
                f"{self.name} axes must be None (1-D positions pos_BL) or an integer >= 1 "
                f"(A-D positions pos_BLA), got {self.axes!r}."
            )
        if C < 2:
            raise ValueError(
                f"{self.name} block_size must be >= 2 (a 1 x 1 skew-symmetric generator is 0: no "
                f"rotation), got {C}."
            )
        if K % C:
            raise ValueError(
                f"{self.name} block_size={C} must divide head_dim={K} (each head is cut into "
                "blocks of block_size components): choose a divisor of head_dim or change "
                "d_model / num_heads."
            )
        if self.init not in INITS:
            raise ValueError(f"Unknown {self.name} init {self.init!r}; choose one of {INITS}.")
        check_positive(f"{self.name} base", self.base)
        check_positive(f"{self.name} init_std", self.init_std)
        if max_position >= DIGIT_BASE**DIGITS:
            raise ValueError(
                f"{self.name} takes positions below 2^24 (where float32 stops counting integers "
                f"exactly), but the run needs max_position={max_position}: shorten the run's "
                "lengths or the position sampler's range."
            )
        if self.init == "rope":
            if C % 2:
                raise ValueError(
                    f"{self.name} init='rope' needs an even block_size (RoPE's rotation pairs "
                    f"must not straddle blocks), got block_size={C}: use an even block_size or "
                    "init='normal'."
                )
            if K % (2 * A):
                raise ValueError(
                    f"{self.name} init='rope' with axes={A} needs head_dim divisible by "
                    f"2 * axes = {2 * A} (whole rotation pairs per axis, as rope_nd), got "
                    f"head_dim={K}: change d_model / num_heads, the axes or use init='normal'."
                )

    def _rope(self, dims: Dims) -> jax.Array:
        return rope_generators(dims.head_dim, self.num_axes, self.block_size, self.base)

    def _normal(self, key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
        # (w - w^T) / sqrt(2) of N(0, 1) entries: off-diagonal entries N(0, 1) again.
        w = jax.random.normal(key, shape)
        return (w - jnp.swapaxes(w, -1, -2)) * (self.init_std / 2**0.5)

    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        self.check(dims, 0)
        return self._init(key, dims)

    @abc.abstractmethod
    def _init(self, key: jax.Array, dims: Dims) -> Params:
        """This layer's parameters, for sizes that `check` accepted."""

    @abc.abstractmethod
    def generators(self, params: Params) -> jax.Array:
        """gen_HAGCE: the skew-symmetric, block-diagonal generators of this layer's heads."""

    def _positions(self, pos: jax.Array, x_BLHK: jax.Array) -> jax.Array:
        """pos_BLA (A = 1 for 1-D positions), broadcast to x's batch."""
        pos = jnp.asarray(pos)
        B, L = x_BLHK.shape[:2]
        if self.axes is None:
            if pos.ndim == 1:
                pos = pos[None]
            if pos.ndim != 2:
                raise ValueError(
                    f"{self.name} with axes=None takes 1-D positions pos_BL, got shape "
                    f"{tuple(pos.shape)}: set axes=A for A-D positions pos_BLA."
                )
            pos = pos[..., None]
        elif pos.ndim != 3 or pos.shape[-1] != self.axes:
            raise ValueError(
                f"{self.name} with axes={self.axes} needs positions pos_BLA of shape "
                f"(B, L, {self.axes}), got shape {tuple(pos.shape)}: use a position sampler "
                f"that emits {self.axes}-D coordinates, or set axes to match."
            )
        return jnp.broadcast_to(pos, (B, L, self.num_axes))

    def _rotate_one(self, gen_HAGCE: jax.Array, x_BLHK: jax.Array, pos: jax.Array) -> jax.Array:
        K, C = x_BLHK.shape[-1], self.block_size
        if K % C:
            self.check(Dims(d_model=K, num_heads=1, head_dim=K), 0)
        pos_BLA = self._positions(pos, x_BLHK)
        if C in CLOSED_FORM_BLOCKS:
            return rotate_closed_form(gen_HAGCE, x_BLHK, pos_BLA)
        if self.commuting and jnp.issubdtype(pos_BLA.dtype, jnp.integer):
            return rotate_blocks(x_BLHK, commuting_rotations(gen_HAGCE, pos_BLA))
        return rotate_blocks(x_BLHK, block_rotations(gen_HAGCE, pos_BLA))

    def rotate(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        gen_HAGCE = self.generators(params)
        return self._rotate_one(gen_HAGCE, q_BLHK, qpos_BL), self._rotate_one(
            gen_HAGCE, k_BMHK, kpos_BM
        )


@dataclasses.dataclass(frozen=True)
class LieRE(_BlockRotation):
    """LieRE (Ostmeier et al., 2024, arXiv 2406.10322): free skew-symmetric generators.

    Per layer, head, axis and block a C x C matrix (`generator_HAGCE`, read through its
    skew-symmetric part), so the generators of different axes need not commute: in n-D, q.k
    depends on absolute positions, not only on their difference; in 1-D it is relative. With
    block_size 2 every generator is a multiple of one 2 x 2 rotation, so LieRE is RoPE with
    learned frequencies; the paper's larger blocks mix more components. Defaults: block_size 4
    (cheap on CPU), init "rope" (see the module docstring).
    """

    name = "liere"

    def _init(self, key: jax.Array, dims: Dims) -> Params:
        H, A, C = dims.num_heads, self.num_axes, self.block_size
        shape = (H, A, dims.head_dim // C, C, C)
        if self.init == "rope":
            gen_HAGCE = jnp.broadcast_to(self._rope(dims)[None], shape)
        else:
            gen_HAGCE = self._normal(key, shape)
        return {"generator_HAGCE": gen_HAGCE}

    def generators(self, params: Params) -> jax.Array:
        return skew(params["generator_HAGCE"].astype(jnp.float32))


@dataclasses.dataclass(frozen=True)
class ComRoPE(_BlockRotation):
    """ComRoPE (Yu et al., 2025, arXiv 2506.03737): generators that commute by construction.

    One learned skew-symmetric matrix per layer, head and block (`generator_HGCE`), shared by
    the axes in one of the paper's two ways (`variant`):

    - "ld" (linearly dependent, default; the paper's better variant): G_a = s_a,g P_g, one
      learned scale per axis and block (`scale_AG`, shared by heads, as in the paper's code);
    - "ap" (axis-partial): block g belongs to one axis and only that axis's generator is
      nonzero there. The paper's code deals blocks to axes round-robin; we give axis a the a-th
      contiguous run of blocks, the same family up to a fixed permutation of components, laid
      out as rope_nd. Needs head_dim divisible by axes * block_size.

    Either way the generators of one block are multiples of one matrix, or zero, so they
    commute and q.k depends only on position differences, in n-D too. With one axis both are
    LieRE (ld with a redundant scale). init "rope" needs head_dim divisible by
    axes * block_size, so that every block holds one axis's pairs (the scale or mask says which).
    """

    name = "comrope"
    variant: Literal["ld", "ap"] = "ld"

    @property
    def commuting(self) -> bool:
        return True

    def check(self, dims: Dims, max_position: int) -> None:
        super().check(dims, max_position)
        if self.variant not in VARIANTS:
            raise ValueError(
                f"Unknown comrope variant {self.variant!r}; choose one of {VARIANTS} (linearly "
                "dependent, axis-partial)."
            )
        K, A, C = dims.head_dim, self.num_axes, self.block_size
        if (self.variant == "ap" or self.init == "rope") and K % (A * C):
            why = "variant='ap' gives" if self.variant == "ap" else "init='rope' gives"
            raise ValueError(
                f"comrope {why} each axis whole blocks, so head_dim={K} must be divisible by "
                f"axes * block_size = {A * C}: change block_size, the axes or d_model / "
                "num_heads."
            )

    def _owner_AG(self, num_blocks: int) -> jax.Array:
        """1.0 where block g belongs to axis a (the a-th contiguous run of blocks), else 0.0."""
        A = self.num_axes
        owner_G = jnp.arange(num_blocks) // max(num_blocks // A, 1)
        return (owner_G[None, :] == jnp.arange(A)[:, None]).astype(jnp.float32)

    def _init(self, key: jax.Array, dims: Dims) -> Params:
        H, A, C = dims.num_heads, self.num_axes, self.block_size
        G = dims.head_dim // C
        k_gen, k_scale = jax.random.split(key)
        if self.init == "rope":
            # Each block holds one axis's pairs, so the sum over axes loses nothing.
            gen_HGCE = jnp.broadcast_to(self._rope(dims).sum(0)[None], (H, G, C, C))
            scale_AG = self._owner_AG(G)
        else:
            gen_HGCE = self._normal(k_gen, (H, G, C, C))
            scale_AG = jax.random.normal(k_scale, (A, G))  # N(0, 1), as the paper's code
        params = {"generator_HGCE": gen_HGCE}
        if self.variant == "ld":
            params["scale_AG"] = scale_AG
        return params

    def generators(self, params: Params) -> jax.Array:
        P_HGCE = skew(params["generator_HGCE"].astype(jnp.float32))
        if self.variant == "ld":
            scale_AG = params["scale_AG"].astype(jnp.float32)
        else:
            scale_AG = self._owner_AG(P_HGCE.shape[1])
        return P_HGCE[:, None] * scale_AG[None, :, :, None, None]
