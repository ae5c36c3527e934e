"""Which runs of two results tables are equal bit for bit: the check that says whether a table
made at one commit carries over to another (training on CPU is deterministic, so a pack rerun at
a commit that did not change its code gives the same numbers, and one that did shows where).

    python scripts/compare_tables.py OLD NEW [--tasks offset flip_flop] [--json OUT.json]

OLD and NEW are folders holding results.parquet, or REV:FOLDER for a folder as git has it at a
revision (`1c177b7:docs/results/leaderboard`). Rows are matched by run id and evaluation length.
For each task and encoding with runs in both, it prints the runs in common, how many rows are
equal in every metric and in the fit verdict, the largest difference in any metric, and the fit
counts of both; then the encodings whose numbers moved. Exit 1 if the tables have no run in
common (nothing was compared), else 0.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

KEY = ["run", "length"]
VERDICT = ["fit", "fit_step"]


def read_table(spec: str) -> pd.DataFrame:
    """results.parquet of a folder, or of REV:FOLDER as git has it."""
    folder = Path(spec)
    if folder.is_dir() or ":" not in spec:
        path = folder / "results.parquet" if folder.is_dir() else folder
        if not path.exists():
            sys.exit(f"{path} does not exist: give a folder holding results.parquet or REV:FOLDER.")
        return pd.read_parquet(path)
    rev, name = spec.split(":", 1)
    shown = subprocess.run(["git", "show", f"{rev}:{Path(name) / 'results.parquet'}"],
                           capture_output=True, check=False)  # fmt: skip
    if shown.returncode:
        sys.exit(f"git could not show {name}/results.parquet at {rev}: "
                 f"{shown.stderr.decode().strip()}")  # fmt: skip
    return pd.read_parquet(io.BytesIO(shown.stdout))


def same(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Elementwise equality where two missing cells are equal."""
    a, b = a.astype(object), b.astype(object)
    missing = a.isna().to_numpy() & b.isna().to_numpy()
    return missing | (a == b).fillna(False).to_numpy(dtype=bool)


def compare(old: pd.DataFrame, new: pd.DataFrame, tasks: list[str]) -> list[dict]:
    """One record per task x encoding with runs in both tables."""
    from pe_research.metrics import METRICS  # here, so that --help answers without jax

    metrics = [m for m in METRICS if m in old.columns and m in new.columns]
    if tasks:
        old, new = old[old["task"].isin(tasks)], new[new["task"].isin(tasks)]
    both = old.merge(new, on=KEY, suffixes=("_old", "_new"))
    records = []
    for (task, encoding), rows in both.groupby(["task_new", "encoding_new"], sort=True):
        equal = np.ones(len(rows), dtype=bool)
        largest = 0.0
        for m in [*metrics, *VERDICT]:
            equal &= same(rows[f"{m}_old"], rows[f"{m}_new"])
        for m in metrics:
            gap = (rows[f"{m}_old"].astype(float) - rows[f"{m}_new"].astype(float)).abs().max()
            largest = max(largest, 0.0 if pd.isna(gap) else float(gap))
        per_run = rows.drop_duplicates("run")
        records.append({
            "task": task, "encoding": encoding, "runs": len(per_run),
            "rows": len(rows), "rows_equal": int(equal.sum()), "largest_difference": largest,
            "fit_old": int(per_run["fit_old"].fillna(False).astype(bool).sum()),
            "fit_new": int(per_run["fit_new"].fillna(False).astype(bool).sum()),
            "commits_old": sorted({str(c)[:12] for c in per_run["commit_old"].dropna()}),
            "commits_new": sorted({str(c)[:12] for c in per_run["commit_new"].dropna()}),
        })  # fmt: skip
    return records


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("old", help="FOLDER or REV:FOLDER")
    parser.add_argument("new", help="FOLDER or REV:FOLDER")
    parser.add_argument("--tasks", nargs="*", default=[], help="only these tasks")
    parser.add_argument("--json", type=Path, default=None, help="also write the records here")
    args = parser.parse_args()
    records = compare(read_table(args.old), read_table(args.new), args.tasks)
    if not records:
        sys.exit(f"{args.old} and {args.new} have no run in common: nothing to compare.")
    print("| task | encoding | runs | rows equal | largest difference | fit old -> new |")
    print("|---|---|---|---|---|---|")
    for r in records:
        print(f"| {r['task']} | {r['encoding']} | {r['runs']} | {r['rows_equal']} of {r['rows']} "
              f"| {r['largest_difference']:.3g} | {r['fit_old']} -> {r['fit_new']} |")  # fmt: skip
    moved = [f"{r['task']}/{r['encoding']}" for r in records if r["rows_equal"] < r["rows"]]
    equal = sum(r["rows_equal"] == r["rows"] for r in records)
    print(f"\n{equal} of {len(records)} task x encoding packs equal bit for bit; "
          f"moved: {', '.join(moved) or 'none'}.")  # fmt: skip
    if args.json is not None:
        args.json.write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
