"""Summaries of finished runs: per-length tables and the generalization table (in distribution,
2x, 4x, 8x the training length, mean and spread over seeds), written as results.csv and
summary.md next to the runs.

Nothing is hidden or mixed silently: a failed run (a diverged loss, see runs.mark_failed)
appears as `failed@step N` and in a "Failed runs" section, and runs produced by different code
(package version, git commit, jax or flax version; runs.code_version) are kept in separate
rows tagged [code A], [code B], ... under a warning that lists which runs differ.
"""

from __future__ import annotations

import os
import statistics
import warnings
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pe_research import metrics, runs
from pe_research.runs.rows import GENERALIZATION_MULTIPLES, in_distribution_length, is_failed_row


def finished_rows(dirs: list[Path]) -> list[dict[str, Any]]:
    """Result rows of the finished runs among `dirs`: the evaluation rows of done runs and, for
    failed runs, rows that say so (`runs.failed_rows`). An unfinished run is never
    summarized."""
    done = [d for d in dirs if runs.is_done(d)]
    failed = [d for d in dirs if not runs.is_done(d) and runs.is_failed(d)]
    return list(runs.eval_rows(done)) + list(runs.failed_rows(failed))


def short_run(run: str) -> str:
    """task/encoding/seedN-hash: the part of a sweep's run directory that names the run."""
    return "/".join(Path(run).parts[-3:])


# -- code versions ----------------------------------------------------------------------------


def code_tags(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Code version -> tag ("A", "B", ...; most runs first) when rows come from more than one
    version of the code; {} when they all agree."""
    runs: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        runs[row.get("code", "unknown")].add(row["run"])
    if len(runs) < 2:
        return {}
    order = sorted(runs, key=lambda code: (-len(runs[code]), code))
    return {code: chr(ord("A") + i) if i < 26 else str(i + 1) for i, code in enumerate(order)}


def code_warning(rows: list[dict[str, Any]]) -> str | None:
    """A warning naming the code versions and the runs of each, or None if there is one."""
    tags = code_tags(rows)
    if not tags:
        return None
    runs: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        runs[row.get("code", "unknown")].add(row["run"])
    lines = [
        f"WARNING: these results come from {len(tags)} different versions of the code; rows of "
        "different versions are kept apart (tagged [code A], [code B], ...) and never averaged "
        "together. Rerun the runs of the older code (delete their directories, then rerun the "
        "sweep) to compare like with like.",
    ]
    for code, tag in tags.items():
        names = sorted(short_run(r) for r in runs[code])
        listed = "" if tag == "A" else ": " + ", ".join(names[:20])
        more = f", ... ({len(names) - 20} more)" if tag != "A" and len(names) > 20 else ""
        lines.append(f"- code {tag}: {code} ({len(names)} runs{listed}{more})")
    return "\n".join(lines)


def _series(row: dict[str, Any], tags: dict[str, str]) -> str:
    tag = tags.get(row.get("code", "unknown"))
    return row["encoding"] if tag is None else f"{row['encoding']} [code {tag}]"


# -- cells ------------------------------------------------------------------------------------


class _Cell:
    """The values of one table cell, and the steps at which its failed runs stopped."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.failed: list[int] = []

    def add(self, row: dict[str, Any], metric: str) -> None:
        if is_failed_row(row):
            self.failed.append(row["failed_step"])
        else:
            self.values.append(row[metric])

    def text(self, fmt: Callable[[list[float]], str], partial: str = "") -> str:
        """fmt(values), marked `partial` if some runs failed; failed@step N if all did."""
        if self.values:
            return fmt(self.values) + (partial if self.failed else "")
        if self.failed:
            return "failed@step " + "/".join(str(s) for s in sorted(set(self.failed)))
        return "-"


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):.3f}"


def summary_table(rows: list[dict[str, Any]], metric: str = metrics.DEFAULT_METRIC) -> str:
    """Text table per task: encodings x evaluation lengths, mean over seeds; a failed run shows
    as failed@step N (or marks the mean of the other seeds with *)."""
    metrics.get(metric)  # ValueError naming the known metrics
    tags = code_tags(rows)
    cells: dict[str, dict[str, dict[int, _Cell]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(_Cell))
    )
    for row in rows:
        cells[row["task"]][_series(row, tags)][row["length"]].add(row, metric)
    out = []
    partial = False
    for task in sorted(cells):
        lengths = sorted({n for enc in cells[task].values() for n in enc})
        texts = {
            enc: [cells[task][enc][n].text(_mean, "*") if n in cells[task][enc] else "-"
                  for n in lengths]
            for enc in cells[task]
        }  # fmt: skip
        partial |= any(t.endswith("*") for ts in texts.values() for t in ts)
        width = max(len(e) for e in cells[task]) + 2
        col = max(7, *(len(t) + 1 for ts in texts.values() for t in ts))
        out.append(f"{task}: {metric} by evaluation length")
        out.append("encoding".ljust(width) + "".join(f"{n:>{col}}" for n in lengths))
        for enc in sorted(cells[task]):
            out.append(enc.ljust(width) + "".join(f"{t:>{col}}" for t in texts[enc]))
        out.append("")
    if partial:
        out.append("*: some seeds failed (see the failed runs); the mean covers the others.")
    if tags:
        out.append("[code X]: runs of different code versions, kept apart (see the warning).")
    if partial or tags:
        out.append("")
    return "\n".join(out)


def per_length_tables(rows: list[dict[str, Any]]) -> str:
    """`summary_table` of every plotted metric that some row carries (bits per byte only for
    byte-level text), one after the other."""
    shown = [m for m in metrics.plotted() if any(r.get(m) is not None for r in rows)]
    return "\n".join(summary_table(rows, m) for m in shown)


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


def generalization_table(rows: list[dict[str, Any]], metric: str = metrics.DEFAULT_METRIC) -> str:
    """Markdown table, one line per task x encoding (x training length, x code version when
    several): `metric` in distribution and at 2x, 4x, 8x the training length, mean and spread
    over seeds. Failed runs are counted in `runs` and read failed@step N where no seed
    finished; a warning comes first when rows come from different code versions."""
    m = metrics.get(metric)  # ValueError naming the known metrics
    tags = code_tags(rows)
    cells: dict[tuple[str, str, int], dict[int, _Cell]] = defaultdict(lambda: defaultdict(_Cell))
    seeds: dict[tuple[str, str, int], dict[str, int]] = defaultdict(dict)
    failed: dict[tuple[str, str, int], set[str]] = defaultdict(set)
    for row in rows:
        key = (row["task"], _series(row, tags), row["train_length"])
        cells[key][row["length"]].add(row, metric)
        seeds[key][row["run"]] = row["seed"]
        if is_failed_row(row):
            failed[key].add(row["run"])
    body, notes = [], []
    for key in sorted(cells):
        task, encoding, train_length = key
        by_length = cells[key]
        n_in = in_distribution_length(set(by_length), train_length)
        in_dist = "-" if n_in is None else by_length[n_in].text(mean_and_spread)
        if n_in is not None and n_in != train_length:
            in_dist += f" (at {n_in})"
        runs = str(len(seeds[key])) + (f" ({len(failed[key])} failed)" if failed[key] else "")
        body.append(
            [task, encoding, str(train_length), runs, in_dist]
            + [
                by_length[k * train_length].text(mean_and_spread)
                if k * train_length in by_length
                else "-"
                for k in GENERALIZATION_MULTIPLES
            ]
        )
        if len(set(seeds[key].values())) < len(seeds[key]):
            notes.append(
                f"Note: {task} / {encoding} has several runs with the same seed: the experiment "
                "varies something besides task, encoding, training length and seed, and this "
                "table averages over it."
            )
    n_failed = len({row["run"] for row in rows if is_failed_row(row)})
    if n_failed:
        notes.append(
            f"Note: {n_failed} run{'s' if n_failed > 1 else ''} failed (see Failed runs): a "
            "cell reads failed@step N where every seed failed; elsewhere the means cover the "
            "runs that finished."
        )
    header = ["task", "encoding", "train length", "runs", "in-distribution"]
    header += [f"{k}x" for k in GENERALIZATION_MULTIPLES]
    intro = (
        f"{metric} ({'higher' if m.higher_is_better else 'lower'} is better): {m.aggregate} over "
        "seeds (± sample std for 3+ seeds, [min, max] for 2). "
        "In-distribution: the training length, or the largest evaluated length below it; "
        "kx: k times the training length; -: not evaluated."
    )
    warning = code_warning(rows)
    head = [warning, ""] if warning else []
    return "\n".join([*head, intro, "", *_markdown(header, body), *notes]) + "\n"


def failed_runs(rows: list[dict[str, Any]], root: Path | None = None) -> str:
    """A markdown list of the failed runs: run, step and reason ("" if none failed)."""
    seen: dict[str, dict[str, Any]] = {}
    for row in rows:
        if is_failed_row(row):
            seen.setdefault(row["run"], row)
    lines = []
    for run, row in sorted(seen.items()):
        name = os.path.relpath(run, root) if root is not None else run
        lines.append(
            f"- {row['task']} / {row['encoding']}, seed {row['seed']} (`{name}`): failed at "
            f"step {row['failed_step']}: {row.get('failure', '?')}"
        )
    if not lines:
        return ""
    lines.append(
        "\nA failed run is not trained again when the sweep is rerun (it would fail the same "
        "way); fix its config, or pass --retry-failed to `pe-research sweep` to train it again."
    )
    return "\n".join(lines) + "\n"


def write_summary(root: Path, rows: list[dict[str, Any]], metric: str) -> list[Path]:
    """root/results.csv (every row; runs relative to root) and root/summary.md (the tables and
    the failed runs). Warns when the rows come from different code versions."""
    root = Path(root)
    csv_path, md_path = root / "results.csv", root / "summary.md"
    runs.write_csv(csv_path, [{**r, "run": os.path.relpath(r["run"], root)} for r in rows])
    failures = failed_runs(rows, root)
    failures = f"## Failed runs\n\n{failures}\n" if failures else ""
    runs.write_atomic(
        md_path,
        f"# Summary of {root}\n\n{generalization_table(rows, metric)}\n{failures}"
        f"## {metric} by evaluation length\n\n```\n{summary_table(rows, metric)}```\n",
    )
    if (warning := code_warning(rows)) is not None:
        warnings.warn(f"{md_path}: {warning}", stacklevel=2)
    return [csv_path, md_path]
