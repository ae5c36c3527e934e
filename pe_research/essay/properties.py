"""The seed essay's five properties, measured for any encoding by calling its hooks.

Pr1 unique and consistent, Pr2 linear relation between positions, Pr3 longer sequences (from
sweep results), Pr4 deterministic, Pr5 n-D positions; plus norm preservation of q and k, the
positional-to-token magnitude ratio and the longest wavelength ("How many positions can it tell
apart?"). Nothing is taken from an encoding's docstring: each number comes from `embed`, `rotate`
or `bias` outputs. Learned encodings are measured at their initial parameters.

The "encoding of a position" is what the encoding's first active hook gives: the additive vector
PE(p) = embed(0, p); for rotations, R_p x for a fixed random x per head; for biases, the bias of
the last query to every key (a function of relative distance). Every measurement returns a plain
dict, or raises NotApplicable saying why it cannot be done; property_report.py assembles them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import jax.numpy as jnp
import numpy as np

from pe_research.encodings.absolute import Sinusoidal
from pe_research.essay.probe import (
    NotApplicable,
    Probe,
    cos_frequency,
    first_line,
    position_vectors,
    rotation_pairs,
)
from pe_research.runs.rows import GENERALIZATION_MULTIPLES, in_distribution_length

SHORT, LONG = 10, 10_000  # Pr1 consistency: position p in a sequence of 10 and of 10,000
SHIFTS = (1, 4, 16, 64)  # Pr2: M_k for these k
OFFSETS = (1, 10, 100, 1000)  # translation of every position by o
TOKENS = 64  # token embeddings sampled to compare magnitudes with
NO_SIGNAL = "no hook depends on position at these parameters"


# -- Pr1 -----------------------------------------------------------------------------------------


def uniqueness(probe: Probe, max_position: int) -> dict[str, Any]:
    """Pr1: the smallest distance between the encodings of two distinct positions in 0..N."""
    probe.require(max_position)
    V, what = position_vectors(probe, max_position + 1)
    sq_P = (V * V).sum(axis=1)
    best, pair = np.inf, (0, 0)
    for start in range(0, len(V), 1024):  # row blocks keep memory at P x 1024
        block = V[start : start + 1024]
        d2 = sq_P[start : start + 1024, None] + sq_P[None, :] - 2.0 * block @ V.T
        rows = np.arange(len(block))
        d2[rows, start + rows] = np.inf
        i, j = np.unravel_index(np.argmin(d2), d2.shape)
        if d2[i, j] < best:
            best, pair = d2[i, j], (start + int(i), int(j))
    # The Gram form loses precision for near-duplicates: recompute the winner exactly.
    distance = float(np.linalg.norm(V[pair[0]] - V[pair[1]]))
    scale = max(1.0, float(np.sqrt(sq_P.max())))
    return {
        "unique": distance > 1e-6 * scale,
        "min_distance": distance,
        "pair": sorted(pair),
        "over": f"0..{max_position}",
        "encoding_of_position": what,
    }


def consistency(probe: Probe, short: int = SHORT, long: int = LONG) -> dict[str, Any]:
    """Pr1: does position p < `short` get the same encoding in sequences of `short` and `long`?

    Additive encodings compare PE(p); others the logits among the first `short` positions (random
    content, the same in both sequences), the part of the model the hooks touch.
    """
    probe.require(long - 1)
    used = probe.hooks
    if "embed" in used or not used:
        a, b = probe.embed(np.arange(short)), probe.embed(np.arange(long))[:short]
        compared = "PE(p)"
    else:
        q, k = probe.content(short, 1), probe.content(long, 2)
        a = probe.logits(q, k[:short], np.arange(short), np.arange(short))
        b = probe.logits(q, k, np.arange(short), np.arange(long))[:, :, :short]
        if probe.dims.causal:  # entries the causal mask hides never reach the model
            keep = np.tril(np.ones((short, short), bool))[None]
            a, b = np.where(keep, a, 0.0), np.where(keep, b, 0.0)
        compared = "logits among the first positions"
    diff = np.abs(a - b)
    at = int(np.unravel_index(np.argmax(diff), diff.shape)[-2 if a.ndim == 3 else 0])
    scale = max(1.0, float(np.abs(a).max()))
    return {
        "consistent": bool(diff.max() <= 1e-5 * scale),
        "max_difference": float(diff.max()),
        "at_position": at,
        "lengths": [short, long],
        "compared": compared,
    }


# -- Pr2 -----------------------------------------------------------------------------------------


def sinusoidal_shift_matrix(dim: int, k: int, *, base: float, layout: str) -> np.ndarray:
    """The essay's M_k: PE(p + k) = M_k PE(p), a 2x2 rotation by k*w_j per (sin, cos) pair."""
    omega_J = base ** (-np.arange(0, dim, 2) / dim)
    J = len(omega_J)
    sin_J = np.arange(J) * 2 if layout == "interleaved" else np.arange(J)
    cos_J = sin_J + (1 if layout == "interleaved" else J)
    c_J, s_J = np.cos(k * omega_J), np.sin(k * omega_J)
    M = np.zeros((dim, dim))
    # sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b - sin a sin b
    M[sin_J, sin_J], M[sin_J, cos_J] = c_J, s_J
    M[cos_J, sin_J], M[cos_J, cos_J] = -s_J, c_J
    return M


def linear_relation(
    probe: Probe, max_position: int, shifts: tuple[int, ...] = SHIFTS
) -> dict[str, Any]:
    """Pr2: the least-squares M_k with V(p + k) ~ M_k V(p) over p in 0..N-k, and its residual.

    For sinusoidal also the residual of the essay's rotation matrix and the fitted map's relative
    (Frobenius) distance from it, with the condition number of the fit: when it is large, many
    maps fit equally well and the fitted one need not be the rotation.
    """
    probe.require(max_position)
    used = probe.hooks
    if not used:
        raise NotApplicable(NO_SIGNAL)
    if "embed" not in used and "rotate" not in used:
        raise NotApplicable(
            "no vector per position: a bias encoding encodes relative positions only "
            "(see shift invariance)"
        )
    V, what = position_vectors(probe, max_position + 1)
    shifts = tuple(k for k in shifts if len(V) - k > V.shape[1])
    if not shifts:
        raise NotApplicable(
            f"{len(V)} positions cannot determine a map of {V.shape[1]} dimensions (any map "
            "fits): raise --max-position above the dimension"
        )
    out: dict[str, Any] = {"encoding_of_position": what, "residual": {}}
    for k in shifts:
        X, Y = V[:-k], V[k:]
        Mt = np.linalg.lstsq(X, Y, rcond=None)[0]
        out["residual"][k] = float(np.linalg.norm(X @ Mt - Y) / np.linalg.norm(Y))
        if isinstance(probe.encoding, Sinusoidal) and "embed" in used:
            enc = probe.encoding
            R = sinusoidal_shift_matrix(V.shape[1], k, base=enc.base, layout=enc.layout)
            out.setdefault("rotation_residual", {})[k] = float(
                np.linalg.norm(X @ R.T - Y) / np.linalg.norm(Y)
            )
            out.setdefault("rotation_distance", {})[k] = float(
                np.linalg.norm(Mt.T - R) / np.linalg.norm(R)
            )
            out["condition_number"] = float(np.linalg.cond(X))
    out["max_residual"] = max(out["residual"].values())
    return out


def shift_invariance(
    probe: Probe, length: int = 32, offsets: tuple[int, ...] = OFFSETS
) -> dict[str, Any]:
    """Does the score of positions (m, n) depend only on m - n? Shift every position by o.

    Rotations and biases: the logits for random content (causal entries only in a causal model).
    Additive encodings: the dot products PE(m).PE(n). Deviations are relative to the largest
    score at offset 0.
    """
    probe.require(length - 1 + max(offsets))
    pos = np.arange(length)
    used = probe.hooks
    if "embed" in used:
        what = "PE(m).PE(n)"

        def score(o: int) -> np.ndarray:
            V = probe.embed(pos + o)
            return V @ V.T
    else:
        what = "logits"
        q, k = probe.content(length, 1), probe.content(length, 2)

        def score(o: int) -> np.ndarray:
            logits_HLM = probe.logits(q, k, pos + o, pos + o)
            if probe.dims.causal:
                return np.where(np.tril(np.ones((length, length), bool))[None], logits_HLM, 0.0)
            return logits_HLM

    ref = score(0)
    scale = max(float(np.abs(ref).max()), 1e-30)
    dev = {o: float(np.abs(score(o) - ref).max() / scale) for o in offsets}
    return {"max_relative_deviation": max(dev.values()), "by_offset": dev, "score": what}


# -- q and k, magnitudes, wavelengths ------------------------------------------------------------


def norm_preservation(probe: Probe, max_position: int) -> dict[str, Any]:
    """Largest | |q'| / |q| - 1 | over positions 0..N, heads and both q and k, after `rotate`."""
    probe.require(max_position)
    n = max_position + 1
    q, k = probe.content(n, 1), probe.content(n, 2)
    q_rot, k_rot = probe.rotate(q, k, np.arange(n), np.arange(n))
    dev = max(
        float(np.abs(np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1) - 1.0).max())
        for a, b in ((q_rot, q), (k_rot, k))
    )
    return {"preserved": dev < 1e-5, "max_deviation": dev}


def magnitude_ratio(probe: Probe, max_position: int, seed: int = 0) -> dict[str, Any]:
    """|PE(p)| / |token embedding| over 0..N; token embeddings drawn as the model draws them
    (unit-variance normal, see model.Transformer): the essay's signal-to-noise argument."""
    probe.require(max_position)
    if "embed" not in probe.hooks:
        raise NotApplicable("no additive positional vector (the embed hook adds nothing)")
    norm_P = np.linalg.norm(probe.embed(np.arange(max_position + 1)), axis=1)
    tokens_VD = np.random.default_rng(seed).standard_normal((TOKENS, probe.dims.d_model))
    token = float(np.linalg.norm(tokens_VD, axis=1).mean())
    return {
        "mean_ratio": float(norm_P.mean() / token),
        "max_ratio": float(norm_P.max() / token),
        "token_norm": token,
    }


def wavelengths(probe: Probe, max_position: int) -> dict[str, Any]:
    """The frequencies the encoding uses, measured, and its longest wavelength 2 pi / w_min:
    the positions before the slowest component repeats. The essay's footnote bounds it by
    floor(2 pi base) (62,831 for base 10000), the limit of a wide model."""
    used = probe.hooks
    if "rotate" in used:
        omegas = [
            d["omega"] for d in rotation_pairs(probe.encoding, probe.layer_params, probe.dims)
        ]
        source = "rotation angles of q at position 1"
    elif "embed" in used:
        probe.require(max_position)
        V = probe.embed(np.arange(max_position + 1))
        starts_at_one = np.flatnonzero(np.abs(V[0] - 1.0) < 1e-6)
        omegas, p_P = [], np.arange(len(V))
        for c in starts_at_one:
            omega = cos_frequency(V[:, c])
            if np.abs(V[:, c] - np.cos(p_P * omega)).max() < 1e-3:
                omegas.append(omega)
        source = "components that follow cos(p w)"
        if not omegas:
            raise NotApplicable("no component of PE(p) is a sinusoid of position")
    else:
        raise NotApplicable("no rotation and no additive vector: nothing periodic to measure")
    omegas = sorted((w for w in omegas if w > 0), reverse=True)
    if not omegas:
        raise NotApplicable("every rotation angle is zero")
    out: dict[str, Any] = {
        "num_frequencies": len(omegas),
        "highest": omegas[0],
        "lowest": omegas[-1],
        "longest_wavelength": 2 * np.pi / omegas[-1],
        "measured_from": source,
    }
    base = getattr(probe.encoding, "base", None)
    if isinstance(base, int | float):
        out["essay_bound"] = math.floor(2 * np.pi * base)
    return out


# -- Pr3, Pr4, Pr5 -------------------------------------------------------------------------------


def deterministic(probe: Probe) -> dict[str, Any]:
    """Pr4: learned or a fixed function of position, with the number of initial parameters."""
    count = {
        where: int(sum(np.size(v) for v in params.values()))
        for where, params in (("embed", probe.embed_params), ("per_layer", probe.layer_params))
    }
    return {"learned": bool(probe.encoding.learned), "parameters": count}


def n_dimensional(probe: Probe, axes: int = 2, n: int = 6) -> dict[str, Any]:
    """Pr5: call every hook with positions pos_BLA of `axes` coordinates (the encoding's own
    count if it is an n-D encoding); the output must keep its shape and depend on every axis."""
    enc = probe.encoding
    A = enc.position_axes or axes
    declared = (
        "declares 1-D positions" if enc.position_axes is None else f"declares {A}-D positions"
    )
    rng = np.random.default_rng(0)
    pos_LA = np.stack([np.arange(n)] * A, axis=-1) + rng.integers(0, 4, (n, A))
    q, k = probe.content(n, 1), probe.content(n, 2)
    zeros_1LD = jnp.zeros((1, n, probe.dims.d_model), jnp.float32)

    def call(pos_LA: np.ndarray) -> list[np.ndarray]:
        pos = jnp.asarray(pos_LA, jnp.int32)[None]
        q_rot, k_rot = enc.rotate(
            probe.layer_params, jnp.asarray(q, jnp.float32)[None],
            jnp.asarray(k, jnp.float32)[None], pos, pos,
        )  # fmt: skip
        outs = [
            enc.embed(probe.embed_params, zeros_1LD, pos),
            q_rot,
            k_rot,
            jnp.broadcast_to(
                enc.bias(probe.layer_params, q[None], k[None], pos, pos),
                (1, probe.dims.num_heads, n, n),
            ),
        ]
        return [np.asarray(o, np.float64) for o in outs]

    try:
        outs = call(pos_LA)
    except Exception as e:  # whatever the hook raises is the reason it cannot take n-D positions
        raise NotApplicable(f"{declared}; with {A}-D positions it fails: {first_line(e)}") from None
    expected = [(1, n, probe.dims.d_model), (1, n, *q.shape[1:]), (1, n, *k.shape[1:])]
    for out, shape in zip(outs, expected, strict=False):
        if out.shape != shape:
            raise NotApplicable(
                f"{declared}; {A}-D positions give shape {out.shape}, expected {shape}"
            )
    if not all(np.isfinite(o).all() for o in outs):
        raise NotApplicable(f"{declared}; {A}-D positions give non-finite values")
    ignored = []
    for a in range(A):
        moved = pos_LA.copy()
        moved[:, a] += np.arange(n) * 3 + 1
        if all(np.array_equal(x, y) for x, y in zip(call(moved), outs, strict=True)):
            ignored.append(a)
    return {"accepts": True, "axes": A, "ignored_axes": ignored}


def longer_sequences(label: str, rows: list[dict[str, Any]] | None) -> dict[str, Any]:
    """Pr3: token accuracy in distribution and at 2x, 4x, 8x the training length, mean over the
    runs of this encoding, per task; from sweep result rows (`runs.eval_rows`)."""
    if rows is None:
        return {"measured": False, "reason": "not measured: pass --results DIR of a sweep"}
    mine = [r for r in rows if r["encoding"] == label]
    if not mine:
        return {"measured": False, "reason": f"not measured: no finished runs of {label!r}"}
    by_task: dict[tuple[str, int], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in mine:
        by_task[(r["task"], r["train_length"])][r["length"]].append(r["token_accuracy"])
    tasks = {}
    for (task, n), by_length in sorted(by_task.items()):
        n_in = in_distribution_length(set(by_length), n)
        mean = {
            m: float(np.mean(by_length[m * n]))
            for m in GENERALIZATION_MULTIPLES
            if by_length.get(m * n)
        }
        if n_in is not None:
            mean[1] = float(np.mean(by_length[n_in]))
        tasks[task] = {f"{m}x": v for m, v in sorted(mean.items())}
    return {"measured": True, "metric": "token_accuracy", "tasks": tasks}
