"""Regenerate every figure of a sweep: line and heatmap plots of each metric, as PNG and PDF.

    python scripts/make_figures.py runs/default [--out runs/default/figures]

Reads the finished runs at or below SWEEP_DIR and writes <kind>_<metric>.{png,pdf} into --out
(default SWEEP_DIR/figures). Same figures as `pe-research plot --kind lines|heatmap`.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="default: SWEEP_DIR/figures")
    args = parser.parse_args(argv)
    # Imported after parsing: --help and argument errors answer without loading jax.
    from pe_research import runs
    from pe_research.sweeps import plotting

    rows = list(runs.eval_rows(runs.find_runs([args.sweep_dir])))
    for path in plotting.write_figures(rows, args.out or args.sweep_dir / "figures"):
        print(f"Wrote {path}")


if __name__ == "__main__":
    main()
