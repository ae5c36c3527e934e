"""The property report: every measurement of properties.py for a list of encodings, as a
markdown table (reasons for "n/a" cells as numbered notes) and a JSON file.

    parse_encoding("rope:base=500")   an encoding from the command line's NAME:KEY=VALUE form
    measure(encoding, ...)            every property of one encoding, JSON-ready
    markdown_table(reports)           the table
    write_report(out_dir, reports)    OUT_DIR/properties.md and OUT_DIR/properties.json
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pe_research import encodings
from pe_research import results as results_lib
from pe_research.encodings import Dims, Encoding
from pe_research.essay import demonstrations
from pe_research.essay.probe import DIMS, NotApplicable, Probe, first_line
from pe_research.essay.properties import (
    NO_SIGNAL,
    OFFSETS,
    consistency,
    deterministic,
    linear_relation,
    longer_sequences,
    magnitude_ratio,
    n_dimensional,
    norm_preservation,
    shift_invariance,
    uniqueness,
    wavelengths,
)


def parse_encoding(spec: str) -> Encoding:
    """NAME or NAME:KEY=VALUE,KEY=VALUE (values read as JSON, else as text), e.g. rope:base=500."""
    name, _, options = spec.partition(":")
    kwargs: dict[str, Any] = {}
    for item in filter(None, options.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(
                f"encoding option {item!r} in {spec!r} is not KEY=VALUE; write e.g. rope:base=500."
            )
        try:
            kwargs[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key.strip()] = value
    cls = encodings.classes().get(name)
    for f in dataclasses.fields(cls) if cls else ():
        value = kwargs.get(f.name)
        if isinstance(f.default, float) and isinstance(value, int) and not isinstance(value, bool):
            kwargs[f.name] = float(value)  # base=500 means 500.0, so labels match sweep runs
    return encodings.get(name, **kwargs)


def guarded(fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """fn(*args), with {"applicable": False, "reason": ...} in place of an exception."""
    try:
        return {"applicable": True, **fn(*args)}
    except NotApplicable as e:
        return {"applicable": False, "reason": f"not applicable: {e}"}
    except Exception as e:  # the report never crashes: an unexpected failure is reported too
        return {"applicable": False, "reason": f"failed: {first_line(e)}"}


def measure(
    encoding: Encoding,
    *,
    max_position: int = 1023,
    dims: Dims = DIMS,
    rows: list[dict[str, Any]] | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Every property of one encoding, as a JSON-ready dict."""
    report: dict[str, Any] = {
        "encoding": encoding.label(),
        "name": encoding.name,
        "dims": dataclasses.asdict(dims),
        "max_position": max_position,
    }
    try:
        probe = Probe.of(encoding, dims, seed)
        report["hooks"] = list(probe.hooks)
    except Exception as e:
        return {**report, "error": f"cannot initialize: {first_line(e)}"}
    report.update(
        pr1_unique=guarded(uniqueness, probe, max_position),
        pr1_consistent=guarded(consistency, probe),
        pr2_linear=guarded(linear_relation, probe, max_position),
        pr2_shift=guarded(shift_invariance, probe),
        pr3_longer=longer_sequences(encoding.label(), rows),
        pr4_deterministic=guarded(deterministic, probe),
        pr5_nd=guarded(n_dimensional, probe),
        norm=guarded(norm_preservation, probe, max_position),
        magnitude=guarded(magnitude_ratio, probe, max_position),
        wavelength=guarded(wavelengths, probe, max_position),
    )
    return report


# -- the table -----------------------------------------------------------------------------------

COLUMNS = (
    "encoding", "signal", "Pr1 unique (0..N)", "Pr1 same in 10 / 10,000", "Pr2 M_k residual",
    "Pr2 shift deviation", "Pr3 token acc.", "Pr4", "Pr5 n-D", "q, k norms",
    "|PE| / |token|", "longest wavelength",
)  # fmt: skip


def _g(x: float) -> str:
    return f"{x:.2g}" if abs(x) < 1e-2 or abs(x) >= 1e4 else f"{x:.3g}"


def _cells(r: dict[str, Any], note: Callable[..., str]) -> list[str]:
    def cell(key: str, fmt: Callable[[dict[str, Any]], str]) -> str:
        m = r[key]
        return fmt(m) if m.get("applicable", True) else note(m["reason"])

    def unique(m: dict[str, Any]) -> str:
        word = "yes" if m["unique"] else "NO"
        return f"{word}, min {_g(m['min_distance'])} at {tuple(m['pair'])}"

    def consistent(m: dict[str, Any]) -> str:
        if m["consistent"]:
            return f"yes (diff {_g(m['max_difference'])})"
        return f"NO: off by {_g(m['max_difference'])} at p={m['at_position']}"

    def linear(m: dict[str, Any]) -> str:
        k = min(m["residual"])
        text = f"{_g(m['residual'][k])} (k={k}), max {_g(m['max_residual'])}"
        if "rotation_distance" in m:
            text += (
                f"; rotation R_{k}: residual {_g(m['rotation_residual'][k])}, "
                f"|M-R|/|R| {_g(m['rotation_distance'][k])} (cond {_g(m['condition_number'])})"
            )
        return text

    def longer(m: dict[str, Any]) -> str:
        if not m["measured"]:
            return note(m["reason"], "not measured")
        return "; ".join(
            f"{task} " + " ".join(f"{k} {v:.2f}" for k, v in acc.items())
            for task, acc in m["tasks"].items()
        )

    def nd(m: dict[str, Any]) -> str:
        if len(m["ignored_axes"]) == m["axes"]:
            return f"accepts {m['axes']}-D, ignores positions"
        ignored = f", ignores axes {m['ignored_axes']}" if m["ignored_axes"] else ""
        return f"yes ({m['axes']}-D{ignored})"

    def norm(m: dict[str, Any]) -> str:
        return ("kept " if m["preserved"] else "NOT kept ") + _g(m["max_deviation"])

    def wavelength(m: dict[str, Any]) -> str:
        essay = f" (essay {m['essay_bound']:,})" if "essay_bound" in m else ""
        return f"{m['longest_wavelength']:,.0f}{essay}"

    if "error" in r:
        return [r["encoding"], note(r["error"])] + ["-"] * (len(COLUMNS) - 2)
    return [
        r["encoding"],
        ", ".join(r["hooks"]) or note(f"not applicable: {NO_SIGNAL}", "none"),
        cell("pr1_unique", unique),
        cell("pr1_consistent", consistent),
        cell("pr2_linear", linear),
        cell("pr2_shift", lambda m: f"{_g(m['max_relative_deviation'])} ({m['score']})"),
        longer(r["pr3_longer"]),
        cell("pr4_deterministic", lambda m: "learned (init params)" if m["learned"] else "fixed"),
        cell("pr5_nd", nd),
        cell("norm", norm),
        cell("magnitude", lambda m: f"{m['mean_ratio']:.3g} (max {m['max_ratio']:.3g})"),
        cell("wavelength", wavelength),
    ]  # fmt: skip


def markdown_table(reports: list[dict[str, Any]]) -> str:
    """One row per encoding; reasons for "n/a" cells are numbered notes under the table."""
    notes: dict[str, int] = {}

    def note(reason: str, word: str = "n/a") -> str:
        number = notes.setdefault(reason, len(notes) + 1)
        return f"{word} [{number}]"

    rows = [_cells(r, note) for r in reports]
    dims = reports[0]["dims"] if reports else dataclasses.asdict(DIMS)
    n = reports[0]["max_position"] if reports else 0
    lines = [
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
        *("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows),
        "",
        f"Measured by calling each encoding's hooks (d_model={dims['d_model']}, "
        f"heads={dims['num_heads']}, head_dim={dims['head_dim']}, causal={dims['causal']}, "
        f"N={n}); learned encodings at their initial parameters. Pr2 M_k residual: "
        "|V(p+k) - M_k V(p)| / |V(p+k)| of the least-squares M_k. Shift deviation: largest "
        f"change of the score of (m, n) when every position moves by o in {OFFSETS}, relative "
        "to the largest score. q, k norms: largest | |rotated| / |original| - 1 |. For bias "
        "encodings Pr1 compares relative distances 0..N (the last query's row of biases).",
        "",
        *(f"[{i}] {reason}" for reason, i in notes.items()),
    ]
    return "\n".join(lines) + "\n"


def write_report(out_dir: Path, reports: list[dict[str, Any]]) -> list[Path]:
    """OUT_DIR/properties.md (the table and its notes) and OUT_DIR/properties.json (every
    number)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js = out_dir / "properties.md", out_dir / "properties.json"
    md.write_text(f"# Positional encoding properties\n\n{markdown_table(reports)}")
    js.write_text(json.dumps(reports, indent=1, default=_plain) + "\n")
    return [md, js]


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python numbers and lists, for json."""
    return value.tolist() if hasattr(value, "tolist") else str(value)


def run(
    out: Path,
    chosen: list[Encoding] | None = None,
    *,
    results: Path | None = None,
    max_position: int = 1023,
    demos: bool = True,
    precision_positions: int = 100_000,
) -> list[Path]:
    """Measure and write the property table of the `chosen` encodings (default: every registered
    one) and, with `demos`, the essay's demonstrations (`pe-research properties`); prints the
    table and returns the files written. `results`: a results folder or sweep folder whose rows
    give Pr3 (results.load)."""
    chosen = chosen or [encodings.get(name) for name in encodings.names()]
    rows = None if results is None else results_lib.as_rows(results_lib.load(results))
    reports = [measure(e, max_position=max_position, rows=rows) for e in chosen]
    paths = write_report(out, reports)
    print(markdown_table(reports))
    if demos:
        data, written = demonstrations.write_demonstrations(
            out, chosen, max_position=precision_positions
        )
        paths += written
        print(demonstrations.describe(data))
    return paths
