"""The seed essay's demonstrations, computed from the encodings' hooks, with their figures.

    dog_sentence       self attention without positions cannot tell the two "dog"s apart
    components_figure  integer, binary and sinusoidal components against position, and in 3-D
    similarity_figure  PE(p) . PE(q) for additive encodings
    rotary_decay       the score of a fixed q, k pair against relative distance (Su et al. 2021)
    precision_study    sinusoid angles in float32 / bfloat16 / float16 / float8 against float64

Data functions return plain dicts and arrays; figure functions take them and return a Figure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
from flax import nnx
from matplotlib.figure import Figure

from pe_research import encodings
from pe_research.config import ModelConfig
from pe_research.encodings import Dims, Encoding
from pe_research.essay.probe import DIMS, Probe, positions
from pe_research.model import Attention

DOG = "The dog chased another dog"

# -- "The dog chased another dog" ----------------------------------------------------------------


def tokenize(text: str) -> tuple[list[int], list[str]]:
    """Lower-cased words -> ids into the sorted vocabulary of the text."""
    words = text.lower().split()
    vocab = sorted(set(words))
    return [vocab.index(w) for w in words], vocab


def dog_sentence(
    encoding_list: list[Encoding],
    *,
    sentence: str = DOG,
    word: str = "dog",
    d_model: int = 16,
    num_heads: int = 2,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One bidirectional attention layer (model.Attention, the same seeded weights for every
    encoding) over seeded random word embeddings plus the encoding's `embed`: are the outputs
    at the two occurrences of `word` identical? Without positions they must be: attention is a
    set operation. Returns, per encoding, `identical` and the largest absolute difference."""
    ids, vocab = tokenize(sentence)
    where = [i for i, t in enumerate(ids) if vocab[t] == word]
    if len(where) < 2:
        raise ValueError(f"{sentence!r} has fewer than two {word!r}: pick a sentence with two.")
    cfg = ModelConfig(
        num_layers=1, d_model=d_model, num_heads=num_heads, mlp_dim=d_model, causal=False
    )
    table_VD = jax.random.normal(jax.random.key(seed), (len(vocab), d_model))
    x_1LD = jnp.take(table_VD, jnp.asarray(ids), axis=0)[None]
    valid_1L = jnp.ones((1, len(ids)), bool)
    out = []
    for enc in encoding_list:
        row: dict[str, Any] = {"encoding": enc.label()}
        try:
            enc.check(cfg.dims(), len(ids) - 1)
        except ValueError as e:
            out.append({**row, "applicable": False, "reason": f"not applicable: {e}"})
            continue
        pos = positions(enc, np.arange(len(ids)))
        pe = enc.init_embed(jax.random.key(seed + 1), cfg.dims())
        attention = Attention(cfg, enc, rngs=nnx.Rngs(seed))
        y_LD = attention(enc.embed(pe, x_1LD, pos), pos, valid_1L)[0]
        a, b = np.asarray(y_LD[where[0]]), np.asarray(y_LD[where[1]])
        row.update(
            applicable=True,
            identical=bool(np.allclose(a, b, rtol=0.0, atol=1e-6)),
            max_difference=float(np.abs(a - b).max()),
            positions=where[:2],
        )
        out.append(row)
    return out


# -- components, similarity ----------------------------------------------------------------------


def additive_vectors(enc: Encoding, n: int, d_model: int) -> np.ndarray:
    """PE_PD of positions 0..n-1 from the encoding's `embed` (initial parameters)."""
    return Probe.of(enc, Dims(d_model=d_model, num_heads=1, head_dim=d_model)).embed(np.arange(n))


def components_figure(
    encoding_list: list[Encoding], n: int = 64, d_model: int = 16, seed: int = 0
) -> Figure:
    """Top: six components of PE(p) against p (static versions of the essay's animations).
    Bottom: a token embedding plus PE(p), its first three components, p = 0..n-1 by colour."""
    fig = Figure(figsize=(4.2 * len(encoding_list), 7.2))
    token_D = np.random.default_rng(seed).standard_normal(d_model)
    p_P = np.arange(n)
    for i, enc in enumerate(encoding_list):
        V = additive_vectors(enc, n, d_model)
        ax = fig.add_subplot(2, len(encoding_list), i + 1)
        for c in range(0, d_model, max(1, d_model // 6)):
            ax.plot(p_P, V[:, c], lw=1, label=f"component {c}")
        ax.set_title(enc.label())
        ax.set_xlabel("position p")
        ax.legend(fontsize=6, loc="upper left")
        ax3 = fig.add_subplot(2, len(encoding_list), len(encoding_list) + i + 1, projection="3d")
        xyz = token_D[None, :3] + V[:, :3]
        ax3.plot(*xyz.T, color="gray", lw=0.5)
        ax3.scatter(*xyz.T, c=p_P, cmap="viridis", s=8)
        ax3.scatter(*token_D[:3], color="red", s=30, label="token embedding")
        ax3.set_title("token + PE(p), first 3 components", fontsize=8)
        ax3.legend(fontsize=6)
    fig.tight_layout()
    return fig


def similarity_figure(encoding_list: list[Encoding], n: int = 128, d_model: int = 64) -> Figure:
    """PE(p) . PE(q) for p, q in 0..n-1: one panel per additive encoding."""
    fig = Figure(figsize=(3.6 * len(encoding_list), 3.4))
    axes = fig.subplots(1, len(encoding_list), squeeze=False)
    for ax, enc in zip(axes[0], encoding_list, strict=True):
        V = additive_vectors(enc, n, d_model)
        image = ax.imshow(V @ V.T, cmap="viridis", origin="lower")
        fig.colorbar(image, ax=ax, shrink=0.8)
        ax.set_title(f"{enc.label()}: PE(p) . PE(q)", fontsize=9)
        ax.set_xlabel("q")
        ax.set_ylabel("p")
    fig.tight_layout()
    return fig


# -- rotary long-term decay ----------------------------------------------------------------------

DECAY_ENCODINGS = (
    ("base", {"base": 100.0}),
    ("base", {"base": 10000.0}),
    ("base", {"base": 1000000.0}),
    ("p", {"p": 1.0}),
    ("p", {"p": 0.75}),
    ("p", {"p": 0.5}),
    ("p", {"p": 0.25}),
)


def rotary_decay(
    max_distance: int = 2048, head_dim: int = 64, cases: tuple = DECAY_ENCODINGS
) -> dict[str, dict[str, list[float]]]:
    """q = k = all ones (Su et al.'s long-term decay): q_d . k_0 / q_0 . k_0 against distance d,
    through the `rotate` hook of RoPE at several bases and p-RoPE fractions, and of xPos.
    Returns panel -> label -> scores over d = 0..max_distance."""
    dims = Dims(d_model=head_dim, num_heads=1, head_dim=head_dim)
    d_L = np.arange(max_distance + 1)
    ones_LHK = np.ones((len(d_L), 1, head_dim), np.float32)
    out: dict[str, dict[str, list[float]]] = {"base": {}, "p": {}}
    entries = [(panel, encodings.get("rope", **hp)) for panel, hp in cases]
    entries.append(("base", encodings.get("xpos")))
    for panel, enc in entries:
        q, k = Probe.of(enc, dims).rotate(ones_LHK, ones_LHK, d_L, np.zeros_like(d_L))
        score_L = (q * k).sum(axis=(1, 2))
        out[panel][enc.label()] = (score_L / score_L[0]).tolist()
    return out


def decay_figure(decay: dict[str, dict[str, list[float]]]) -> Figure:
    fig = Figure(figsize=(5.2 * len(decay), 3.6))
    axes = fig.subplots(1, len(decay), squeeze=False)
    titles = {"base": "RoPE bases (and xPos)", "p": "p-RoPE, base 10000"}
    for ax, (panel, lines) in zip(axes[0], decay.items(), strict=True):
        for label, scores in lines.items():
            ax.plot(np.arange(len(scores)), scores, lw=1, label=label)
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlabel("relative distance m - n")
        ax.set_ylabel("q.k / q.k at distance 0 (q = k = ones)")
        ax.set_title(titles.get(panel, panel))
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


# -- low precision -------------------------------------------------------------------------------


def precision_dtypes() -> dict[str, Any]:
    """float32, bfloat16, float16 and the float8 types this JAX provides."""
    names = ("float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")
    return {name: getattr(jnp, name) for name in names if hasattr(jnp, name)}


REPORT_AT = (10, 100, 1000, 10_000, 100_000)


def precision_study(
    dim: int, *, base: float = 10000.0, max_position: int = 100_000
) -> dict[str, dict[str, Any]]:
    """Angles p * w_j (w_j = base^(-2j/dim), shared by sinusoidal and RoPE) with p and w_j cast
    to each dtype and multiplied in it; cos and sin are rounded to the same dtype. Against float64:
    the largest error of any cos or sin entry per position (the entries of the rotation, or of
    the sinusoidal vector), and the first position p whose encoding equals that of p + 1 or is not
    finite. The library itself computes angles in float32 (the float32 row)."""
    omega_J = base ** (-np.arange(0, dim, 2) / dim)
    p_P = np.arange(max_position + 1)
    angle64_PJ = p_P[:, None] * omega_J[None, :]
    cos64_PJ, sin64_PJ = np.cos(angle64_PJ), np.sin(angle64_PJ)
    out = {}
    for name, dtype in precision_dtypes().items():
        angle_PJ = (
            jnp.asarray(p_P).astype(dtype)[:, None] * jnp.asarray(omega_J).astype(dtype)[None]
        )
        angle32_PJ = angle_PJ.astype(jnp.float32)
        cos_PJ = np.asarray(jnp.cos(angle32_PJ).astype(dtype).astype(jnp.float32), np.float64)
        sin_PJ = np.asarray(jnp.sin(angle32_PJ).astype(dtype).astype(jnp.float32), np.float64)
        err_P = np.maximum(np.abs(cos_PJ - cos64_PJ), np.abs(sin_PJ - sin64_PJ)).max(axis=1)
        finite_P = np.isfinite(cos_PJ).all(axis=1) & np.isfinite(sin_PJ).all(axis=1)
        err_P = np.where(finite_P, err_P, np.inf)
        same_P = (cos_PJ[1:] == cos_PJ[:-1]).all(axis=1) & (sin_PJ[1:] == sin_PJ[:-1]).all(axis=1)
        broken = np.flatnonzero(same_P | ~finite_P[:-1] | ~finite_P[1:])
        nonfinite = np.flatnonzero(~finite_P)
        out[name] = {
            "error_by_position": err_P,
            "error_at": {p: float(err_P[p]) for p in REPORT_AT if p <= max_position},
            "first_indistinct": int(broken[0]) if len(broken) else None,
            "first_nonfinite": int(nonfinite[0]) if len(nonfinite) else None,
        }
    return out


def precision_figure(studies: dict[str, dict[str, dict[str, Any]]]) -> Figure:
    """Error against float64 by position, one panel per study; the maximum over log-spaced bins,
    a cross at the first position whose neighbour gets the same encoding."""
    fig = Figure(figsize=(5.4 * len(studies), 3.8))
    axes = fig.subplots(1, len(studies), squeeze=False)
    for ax, (title, study) in zip(axes[0], studies.items(), strict=True):
        for i, (name, s) in enumerate(study.items()):
            err_P = s["error_by_position"]
            edges = np.unique(np.geomspace(1, len(err_P), 120).astype(int))
            peak = [err_P[a:b].max() for a, b in zip(edges[:-1], edges[1:], strict=True)]
            peak = np.where(np.isfinite(peak), peak, np.nan)
            color = matplotlib.colormaps["tab10"](i)
            ax.plot(edges[:-1], np.maximum(peak, 1e-12), lw=1, color=color, label=name)
            if (p := s["first_indistinct"]) is not None and p > 0:
                finite = err_P[p] if np.isfinite(err_P[p]) else 1.0
                ax.plot([p], [max(finite, 1e-12)], "x", color=color, ms=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("position p")
        ax.set_ylabel("max |cos, sin error| vs float64")
        ax.set_title(f"{title}; x: p and p+1 collide", fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


# -- all of them ---------------------------------------------------------------------------------

ESSAY_ADDITIVE = ("integer", "binary", "sinusoidal")


def write_demonstrations(
    out_dir: Path, encoding_list: list[Encoding], *, max_position: int = 100_000
) -> tuple[dict[str, Any], list[Path]]:
    """Every demonstration: figures as PNG and the numbers as demonstrations.json in `out_dir`;
    returns (the numbers, the paths written).

    The dog sentence and the similarity heatmaps use `encoding_list` (heatmaps: those whose
    `embed` carries position); components, decay and precision use the essay's encodings.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = {
        "components": components_figure([encodings.get(n) for n in ESSAY_ADDITIVE]),
        "rotary_decay": decay_figure(decay := rotary_decay()),
    }
    additive = [e for e in encoding_list if "embed" in Probe.of(e).hooks]
    if additive:
        figures["similarity"] = similarity_figure(additive)
    studies = {
        f"sinusoidal (d_model={DIMS.d_model})": precision_study(
            DIMS.d_model, max_position=max_position
        ),
        f"rope (head_dim={DIMS.head_dim})": precision_study(
            DIMS.head_dim, max_position=max_position
        ),
    }
    figures["precision"] = precision_figure(studies)
    paths = []
    for stem, fig in figures.items():
        paths.append(out_dir / f"{stem}.png")
        fig.savefig(paths[-1], dpi=120)
    data = {
        "dog": dog_sentence(encoding_list),
        "rotary_decay": {
            panel: {label: {"at_distance": {d: s[d] for d in (1, 10, 100, 1000) if d < len(s)}}
                    for label, s in lines.items()}
            for panel, lines in decay.items()
        },
        "precision": {
            title: {
                name: {k: v for k, v in s.items() if k != "error_by_position"}
                for name, s in study.items()
            }
            for title, study in studies.items()
        },
    }  # fmt: skip
    paths.append(out_dir / "demonstrations.json")
    paths[-1].write_text(json.dumps(data, indent=1) + "\n")
    return data, paths


def describe(data: dict[str, Any]) -> str:
    """The demonstrations' numbers in words, as the command prints them."""
    lines = [f'"{DOG}": are the attention outputs at the two "dog" tokens identical?']
    for r in data["dog"]:
        if not r["applicable"]:
            lines.append(f"  {r['encoding']}: {r['reason']}")
        elif r["identical"]:
            lines.append(f"  {r['encoding']}: True")
        else:
            lines.append(
                f"  {r['encoding']}: False (they differ by up to {r['max_difference']:.3g})"
            )
    lines.append(
        "Low precision: first position p where p and p+1 get the same encoding or it is not "
        "finite (the largest cos/sin error against float64 at the last position):"
    )
    for title, study in data["precision"].items():
        cells = []
        for name, s in study.items():
            last = list(s["error_at"].items())[-1]
            first = "none" if s["first_indistinct"] is None else str(s["first_indistinct"])
            cells.append(f"{name} {first} (error at {last[0]}: {last[1]:.2g})")
        lines.append(f"  {title}: " + "; ".join(cells))
    return "\n".join(lines)
