"""Calling an encoding's hooks on one row, to measure what it does with positions.

A `Probe` holds an encoding with its initial parameters and calls `embed`, `rotate` and `bias`
on a batch of one, returning float64 numpy arrays. `hooks_used` finds which hooks carry position
by calling them; `rotation_pairs` finds the rotated pairs of head components and their angles in
any layout. Used by the property report (properties.py) and the analysis of trained models.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pe_research.encodings import Dims, Encoding
from pe_research.encodings.base import Params

DIMS = Dims(d_model=64, num_heads=4, head_dim=16, causal=True)


class NotApplicable(Exception):
    """This measurement does not apply to this encoding; the message says why."""


def positions(encoding: Encoding, pos_L: Any) -> jax.Array:
    """pos_1L, or for an n-D encoding pos_1LA with the position on axis 0, others at 0."""
    pos_1L = jnp.asarray(pos_L, jnp.int32)[None, :]
    A = encoding.position_axes
    if A is None:
        return pos_1L
    return jnp.stack([pos_1L] + [jnp.zeros_like(pos_1L)] * (A - 1), axis=-1)


@dataclasses.dataclass(frozen=True)
class Probe:
    """An encoding with its initial parameters, and its hooks called on one row (batch of 1)."""

    encoding: Encoding
    dims: Dims
    embed_params: Params
    layer_params: Params

    @classmethod
    def of(cls, encoding: Encoding, dims: Dims = DIMS, seed: int = 0) -> Probe:
        k_embed, k_layer = jax.random.split(jax.random.key(seed))
        return cls(
            encoding, dims, encoding.init_embed(k_embed, dims), encoding.init_layer(k_layer, dims)
        )

    @functools.cached_property
    def hooks(self) -> tuple[str, ...]:
        """The hooks that carry position (see `hooks_used`), found once."""
        return tuple(hooks_used(self))

    def positions(self, pos_L: Any) -> jax.Array:
        return positions(self.encoding, pos_L)

    def require(self, max_position: int) -> None:
        try:
            self.encoding.check(self.dims, max_position)
        except ValueError as e:
            raise NotApplicable(str(e)) from None

    def embed(self, pos_L: Any) -> np.ndarray:
        """PE_LD: what `embed` adds to a zero token embedding."""
        pos = self.positions(pos_L)
        zeros_1LD = jnp.zeros((1, pos.shape[1], self.dims.d_model), jnp.float32)
        return np.asarray(self.encoding.embed(self.embed_params, zeros_1LD, pos)[0], np.float64)

    def rotate(self, q_LHK, k_MHK, qpos_L, kpos_M) -> tuple[np.ndarray, np.ndarray]:
        q, k = self.encoding.rotate(
            self.layer_params,
            jnp.asarray(q_LHK, jnp.float32)[None],
            jnp.asarray(k_MHK, jnp.float32)[None],
            self.positions(qpos_L),
            self.positions(kpos_M),
        )
        return np.asarray(q[0], np.float64), np.asarray(k[0], np.float64)

    def bias(self, q_LHK, k_MHK, qpos_L, kpos_M) -> np.ndarray:
        q_1LHK = jnp.asarray(q_LHK, jnp.float32)[None]
        k_1MHK = jnp.asarray(k_MHK, jnp.float32)[None]
        bias = self.encoding.bias(
            self.layer_params, q_1LHK, k_1MHK, self.positions(qpos_L), self.positions(kpos_M)
        )
        shape = (1, self.dims.num_heads, q_1LHK.shape[1], k_1MHK.shape[1])
        return np.asarray(jnp.broadcast_to(bias, shape)[0], np.float64)

    def logits(self, q_LHK, k_MHK, qpos_L, kpos_M) -> np.ndarray:
        """logits_HLM as the model computes them: rotate, q.k / sqrt(K), plus the bias."""
        q, k = self.rotate(q_LHK, k_MHK, qpos_L, kpos_M)
        scores_HLM = np.einsum("LHK,MHK->HLM", q, k) * self.dims.head_dim**-0.5
        return scores_HLM + self.bias(q_LHK, k_MHK, qpos_L, kpos_M)

    def content(self, n: int, seed: int = 1, shared: bool = False) -> np.ndarray:
        """Random q or k content x_LHK, float32 (one vector at every position if `shared`)."""
        H, K = self.dims.num_heads, self.dims.head_dim
        x = np.random.default_rng(seed).standard_normal((1 if shared else n, H, K), np.float32)
        return np.broadcast_to(x, (n, H, K)) if shared else x


def hooks_used(probe: Probe, n: int = 8) -> list[str]:
    """The hooks whose output depends on position (embed, rotate, bias), found by calling them."""
    pos = np.arange(n)
    q, k = probe.content(n, 1), probe.content(n, 2)
    used = []
    if np.ptp(probe.embed(pos), axis=0).max() > 0:
        used.append("embed")
    q_rot, k_rot = probe.rotate(q, k, pos, pos)
    if not (np.allclose(q_rot, q, rtol=0, atol=1e-7) and np.allclose(k_rot, k, rtol=0, atol=1e-7)):
        used.append("rotate")
    if np.abs(probe.bias(q, k, pos, pos)).max() > 0:
        used.append("bias")
    return used


def position_vectors(probe: Probe, n: int) -> tuple[np.ndarray, str]:
    """V_PX, the encoding of positions 0..n-1 by the first active hook, and what it is."""
    pos = np.arange(n)
    used = probe.hooks
    if "embed" in used or not used:
        return probe.embed(pos), "PE(p) added to the embedding"
    if "rotate" in used:
        x = probe.content(n, seed=3, shared=True)
        q, _ = probe.rotate(x, x, pos, pos)
        return q.reshape(n, -1), "R_p x for a fixed x per head"
    # The last query's row, reversed: row d is the bias at relative distance d, over heads.
    x = probe.content(n, seed=3, shared=True)
    bias_HLM = probe.bias(x, x, pos, pos)
    return bias_HLM[:, -1, ::-1].T.copy(), "bias at relative distance d (last query row)"


def cos_frequency(values_P: np.ndarray) -> float:
    """w such that values_P[p] ~ cos(p w), refined at p = 1, 2, 4, ... (float32 cannot resolve
    cos(w) from 1 for the slowest sinusoids, but cos(p w) at large p it can)."""
    omega = float(np.arccos(np.clip(values_P[1], -1.0, 1.0)))
    p = 2
    while p < len(values_P):
        theta = float(np.arccos(np.clip(values_P[p], -1.0, 1.0)))
        turns = round(p * omega / (2 * np.pi))
        candidates = [
            s * theta + 2 * np.pi * m for s in (1, -1) for m in (turns - 1, turns, turns + 1)
        ]
        omega = min(candidates, key=lambda c: abs(c - p * omega)) / p
        p *= 2
    return omega


def rotation_pairs(
    encoding: Encoding, params: Params, dims: Dims, tol: float = 1e-7
) -> list[dict[str, Any]]:
    """Each rotated pair of head components with its angle per unit position, from `rotate`.

    Component c of a unit vector e_c rotated at position 1 keeps cos(w) and moves sin(w) onto
    its partner; this finds pairs in any layout. n-D encodings: one unit position per axis.
    Components that do not rotate (p-RoPE's zeroed frequencies, partial rotary) are left out.
    """
    H, K = dims.num_heads, dims.head_dim
    eye_KHK = np.broadcast_to(np.eye(K)[:, None, :], (K, H, K))
    A = encoding.position_axes
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for axis in range(A or 1):
        ones_K = np.ones(K, np.int32)
        pos = (
            ones_K[None] if A is None else np.eye(A, dtype=np.int32)[axis][None, None].repeat(K, 1)
        )
        unit_1KHK = jnp.asarray(eye_KHK, jnp.float32)[None]
        q, _ = encoding.rotate(params, unit_1KHK, unit_1KHK, jnp.asarray(pos), jnp.asarray(pos))
        rot_KK = np.asarray(q[0, :, 0, :], np.float64)  # row c: R_1 e_c (head 0)
        for c in range(K):
            other = rot_KK[c].copy()
            other[c] = 0.0
            partner = int(np.argmax(np.abs(other)))
            if abs(other[partner]) > tol:
                omega = float(np.arctan2(abs(other[partner]), rot_KK[c, c]))
                found[tuple(sorted((c, partner)))] = {
                    "components": sorted((c, partner)),
                    "omega": omega,
                    "axis": axis,
                }
    return sorted(found.values(), key=lambda d: -d["omega"])


def first_line(e: BaseException) -> str:
    """The exception's type and first line, short enough for a table note."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]
