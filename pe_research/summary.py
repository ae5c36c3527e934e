"""Summaries of finished runs: per-length tables and the generalization table (in distribution,
2x, 4x, 8x the training length, mean and spread over seeds), written as results.csv and
summary.md next to the runs."""

from __future__ import annotations

import os
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from pe_research import results


def finished_rows(dirs: list[Path]) -> list[dict[str, Any]]:
    """Result rows of the finished runs among `dirs`: an unfinished run is never summarized."""
    return list(results.eval_rows(d for d in dirs if results.is_done(d)))


def summary_table(rows: list[dict[str, Any]], metric: str = "token_accuracy") -> str:
    """Text table per task: encodings x evaluation lengths, mean over seeds."""
    cells: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for row in rows:
        cells[row["task"]][row["encoding"]][row["length"]].append(row[metric])
    out = []
    for task in sorted(cells):
        lengths = sorted({n for enc in cells[task].values() for n in enc})
        width = max(len(e) for e in cells[task]) + 2
        out.append(f"{task}: {metric} by evaluation length")
        out.append("encoding".ljust(width) + "".join(f"{n:>7}" for n in lengths))
        for enc in sorted(cells[task]):
            vals = cells[task][enc]
            out.append(
                enc.ljust(width)
                + "".join(
                    f"{sum(vals[n]) / len(vals[n]):7.3f}" if vals.get(n) else "      -"
                    for n in lengths
                )
            )
        out.append("")
    return "\n".join(out)


MULTIPLES = (2, 4, 8)


def in_distribution_length(lengths: set[int], train_length: int) -> int | None:
    """The training length if evaluated, else the largest evaluated length below it."""
    below = [n for n in lengths if n <= train_length]
    return max(below) if below else None


def mean_and_spread(values: list[float]) -> str:
    """Mean, then the sample std (3+ values) or [min, max] (2 values)."""
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.3f}"
    if len(values) == 2:
        return f"{mean:.3f} [{min(values):.3f}, {max(values):.3f}]"
    return f"{mean:.3f} ± {statistics.stdev(values):.3f}"


def _markdown(header: list[str], body: list[list[str]]) -> list[str]:
    widths = [max(len(r[j]) for r in [header, *body]) for j in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return [line(header), line(["-" * w for w in widths]), *map(line, body)]


def generalization_table(rows: list[dict[str, Any]], metric: str = "token_accuracy") -> str:
    """Markdown table, one line per task x encoding (x training length): `metric` in
    distribution and at 2x, 4x, 8x the training length, mean and spread over seeds."""
    cells: dict[tuple[str, str, int], dict[int, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    seeds: dict[tuple[str, str, int], dict[str, int]] = defaultdict(dict)
    for row in rows:
        key = (row["task"], row["encoding"], row["train_length"])
        cells[key][row["length"]].append(row[metric])
        seeds[key][row["run"]] = row["seed"]
    body, notes = [], []
    for key in sorted(cells):
        task, encoding, train_length = key
        by_length = cells[key]
        n_in = in_distribution_length(set(by_length), train_length)
        in_dist = "-" if n_in is None else mean_and_spread(by_length[n_in])
        if n_in is not None and n_in != train_length:
            in_dist += f" (at {n_in})"
        body.append(
            [task, encoding, str(train_length), str(len(seeds[key])), in_dist]
            + [
                mean_and_spread(by_length[k * train_length])
                if by_length.get(k * train_length)
                else "-"
                for k in MULTIPLES
            ]
        )
        if len(set(seeds[key].values())) < len(seeds[key]):
            notes.append(
                f"Note: {task} / {encoding} has several runs with the same seed: the experiment "
                "varies something besides task, encoding, training length and seed, and this "
                "table averages over it."
            )
    header = ["task", "encoding", "train length", "runs", "in-distribution"]
    header += [f"{k}x" for k in MULTIPLES]
    intro = (
        f"{metric}: mean over seeds (± sample std for 3+ seeds, [min, max] for 2). "
        "In-distribution: the training length, or the largest evaluated length below it; "
        "kx: k times the training length; -: not evaluated."
    )
    return "\n".join([intro, "", *_markdown(header, body), *notes]) + "\n"


def write_summary(root: Path, rows: list[dict[str, Any]], metric: str) -> list[Path]:
    """root/results.csv (every row; runs relative to root) and root/summary.md (the tables)."""
    root = Path(root)
    csv_path, md_path = root / "results.csv", root / "summary.md"
    results.write_csv(csv_path, [{**r, "run": os.path.relpath(r["run"], root)} for r in rows])
    results.write_atomic(
        md_path,
        f"# Summary of {root}\n\n{generalization_table(rows, metric)}\n"
        f"## {metric} by evaluation length\n\n```\n{summary_table(rows, metric)}```\n",
    )
    return [csv_path, md_path]
