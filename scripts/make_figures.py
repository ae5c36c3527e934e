"""Regenerate every figure of a sweep: line and heatmap plots of each metric, as PNG and PDF.

    python scripts/make_figures.py runs/default [--out runs/default/figures]

Reads the finished runs at or below SWEEP_DIR and writes <kind>_<metric>.{png,pdf} into --out
(default SWEEP_DIR/figures). Same figures as `pe-research plot --kind lines|heatmap`.
"""

from __future__ import annotations

from pathlib import Path

import tyro

from pe_research import runs
from pe_research.sweeps import plotting


def main(sweep_dir: tyro.conf.Positional[Path], out: Path | None = None) -> None:
    rows = list(runs.eval_rows(runs.find_runs([sweep_dir])))
    for path in plotting.write_figures(rows, out or sweep_dir / "figures"):
        print(f"Wrote {path}")


if __name__ == "__main__":
    tyro.cli(main)
