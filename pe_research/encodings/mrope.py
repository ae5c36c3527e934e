"""Multimodal RoPE: one RoPE over the whole head whose rotation pairs read different position axes.

Positions are pos_BLA with A = 3 coordinates per token, (time, height, width). Every rotation pair
j keeps RoPE's frequency base^(-2j/K) over the full head (highest first) but turns by the
coordinate of the axis it is assigned to, so q.k depends only on the per-axis offsets, and on
text, where all three coordinates equal the token index, the encoding is exactly RoPE. The
variants differ only in which pairs go to which axis (`axis_of_pairs`).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp

from pe_research.encodings.base import Dims, Encoding, Params, check_even, check_positive
from pe_research.encodings.rotary import rope_frequencies, rotate_pairs

ASSIGNMENTS = ("blocks", "interleaved", "time_low")
AXES = ("time", "height", "width")


def default_sections(head_dim: int) -> tuple[int, int, int]:
    """Qwen2-VL's proportions for any head: height and width 3/8 of the J = K/2 pairs each (rounded
    down), time the rest; (16, 24, 24) at head_dim 128."""
    J = head_dim // 2
    spatial = 3 * J // 8
    return (J - 2 * spatial, spatial, spatial)


def axis_of_pairs(sections: tuple[int, ...], assignment: str) -> tuple[int, ...]:
    """axis_J: the position axis (0 time, 1 height, 2 width) that turns rotation pair j, pairs
    ordered from the highest frequency; axis a gets sections[a] pairs.

    "blocks" (Qwen2-VL): contiguous sections, time on the highest frequencies, then height, width.
    "interleaved" (as Qwen3-VL's interleaved M-RoPE): round robin t, h, w, t, h, w, ... over the
    axes that still have pairs left, so unequal sections end in a run of the largest.
    "time_low" (VideoRoPE's low-frequency temporal allocation): height and width round robin over
    the highest frequencies, time on the sections[0] lowest.
    """
    if assignment not in ASSIGNMENTS:
        raise ValueError(f"Unknown mrope assignment {assignment!r}; choose one of {ASSIGNMENTS}.")
    if assignment == "blocks":
        return tuple(a for a, n in enumerate(sections) for _ in range(n))
    if assignment == "interleaved":
        return _round_robin(range(len(sections)), sections)
    spatial = _round_robin(range(1, len(sections)), sections)
    return spatial + (0,) * sections[0]


def _round_robin(axes: range, sections: tuple[int, ...]) -> tuple[int, ...]:
    left = {a: sections[a] for a in axes}
    out: list[int] = []
    while any(left.values()):
        for a in axes:
            if left[a]:
                out.append(a)
                left[a] -= 1
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class MRoPE(Encoding):
    """M-RoPE (Wang et al., 2024, "Qwen2-VL", arXiv 2409.12191) and its interleaved variants.

    Positions pos_BLA, A = 3: (time, height, width); for text give the token index on all three
    axes. `sections`: rotation pairs per axis, summing to head_dim / 2 (Qwen2-VL: (16, 24, 24) at
    head_dim 128); None takes Qwen2-VL's proportions for the head (`default_sections`).
    `assignment` (see `axis_of_pairs`): "blocks" is Qwen2-VL's contiguous split; "interleaved"
    spreads every axis over the whole spectrum (t, h, w, t, h, w, ...); "time_low" puts time on the
    lowest frequencies with height and width interleaved above it, the frequency allocation of
    VideoRoPE (Wei et al., 2025, arXiv 2502.05173). VideoRoPE's other two parts, the diagonal
    layout (spatial coordinates offset by the frame's time) and adjustable temporal spacing (time
    scaled by delta), change the positions, not the encoding: they belong to a position sampler.
    One class serves all three because they differ only in the pair -> axis table; the angle of
    pair j is always pos[axis_J[j]] * base^(-2j/K), so each variant keeps RoPE's per-axis
    relative property and equals RoPE on text. `layout`: how components pair, as RoPE's ("half",
    Qwen2-VL's code; or "interleaved").
    """

    name = "mrope"
    position_axes = 3
    base: float = 10000.0
    sections: tuple[int, ...] | None = None
    assignment: Literal["blocks", "interleaved", "time_low"] = "blocks"
    layout: Literal["half", "interleaved"] = "half"

    def __post_init__(self):
        # JSON gives a list; a tuple keeps the encoding hashable.
        if self.sections is not None and not isinstance(self.sections, tuple):
            object.__setattr__(self, "sections", tuple(self.sections))

    def sections_for(self, head_dim: int) -> tuple[int, ...]:
        return default_sections(head_dim) if self.sections is None else self.sections

    def check(self, dims: Dims, max_position: int) -> None:
        check_positive("mrope base", self.base)
        check_even("head_dim for mrope", dims.head_dim, "choose d_model / num_heads even.")
        if self.layout not in ("half", "interleaved"):
            raise ValueError(
                f"Unknown rope layout {self.layout!r}; choose one of ('half', 'interleaved')."
            )
        axis_of_pairs((1, 1, 1), self.assignment)  # names the known assignments
        J = dims.head_dim // 2
        sections = self.sections_for(dims.head_dim)
        if len(sections) != 3 or not all(isinstance(n, int) for n in sections):
            raise ValueError(
                f"mrope sections must be 3 integers, pairs for (time, height, width), got "
                f"{sections!r}: e.g. sections={default_sections(dims.head_dim)} for head_dim "
                f"{dims.head_dim}."
            )
        if sum(sections) != J or min(sections) < 1:
            where = "default " if self.sections is None else ""
            raise ValueError(
                f"mrope {where}sections {sections} (sum {sum(sections)}) must give each of time, "
                f"height and width at least one rotation pair and add up to head_dim / 2 = {J} "
                f"(head_dim={dims.head_dim}): "
                + (
                    "raise head_dim to at least 6 (d_model / num_heads)."
                    if self.sections is None
                    else f"choose sections summing to {J}, e.g. {default_sections(dims.head_dim)}."
                )
            )

    def _rotate_one(self, x_BLHK: jax.Array, pos_BLA: jax.Array) -> jax.Array:
        if pos_BLA.ndim != 3 or pos_BLA.shape[-1] != 3:
            raise ValueError(
                f"mrope needs positions pos_BLA of shape (B, L, 3), (time, height, width) per "
                f"token, got shape {tuple(pos_BLA.shape)}: use a position sampler that emits 3-D "
                "coordinates (for text, the token index on all three axes)."
            )
        K = x_BLHK.shape[-1]
        self.check(Dims(d_model=K, num_heads=1, head_dim=K), 0)
        inv_freq_J, _ = rope_frequencies(K, base=self.base)
        axis_J = jnp.asarray(axis_of_pairs(self.sections_for(K), self.assignment))
        # Static indices in [0, 3): the gather cannot go out of range.
        pos_BLJ = jnp.take(pos_BLA, axis_J, axis=-1)
        angle_BLJ = pos_BLJ.astype(jnp.float32) * inv_freq_J.astype(jnp.float32)[None, None]
        return rotate_pairs(x_BLHK, angle_BLJ, layout=self.layout)

    def rotate(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        return self._rotate_one(q_BLHK, qpos_BL), self._rotate_one(k_BMHK, kpos_BM)
