"""Every figure of a sweep: line and heatmap plots of each metric, and steps to fit, as PNG and
PDF (a sweep's page shows its own metric's only).

    python scripts/make_figures.py docs/results/default [--out figures/default]

Reads a results folder (or the finished runs at or below a folder: pe_research.results.load) and
writes <kind>_<metric>.{png,pdf} into --out (default SWEEP_DIR/figures). Same figures as
`pe-research plot --kind lines|heatmap`.
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
    from pe_research import results
    from pe_research.sweeps import plotting

    rows = results.as_rows(results.load(args.sweep_dir, strict=True))
    for path in plotting.write_figures(rows, args.out or args.sweep_dir / "figures"):
        print(f"Wrote {path}")


if __name__ == "__main__":
    main()
