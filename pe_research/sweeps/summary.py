"""Summaries of finished runs: per-length tables and the generalization table (in distribution,
2x, 4x, 8x the training length, mean and spread over seeds), written as results.csv and
summary.md next to the runs.

Nothing is hidden or mixed silently: a failed run (a diverged loss, see runs.mark_failed)
appears as `failed@step N` and in a "Failed runs" section, and runs produced by different code
(package version, git commit, jax or flax version; runs.code_version) are kept in separate
rows tagged [code A], [code B], ... under a warning that lists which runs differ.
"""

from __future__ import annotations

import itertools
import os
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

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
    as failed@step N (or marks the mean of the other seeds with *). Runs that did not fit are
    rows of their own, "ENCODING (unfit)", below the others."""
    metrics.get(metric)  # ValueError naming the known metrics
    rows = runs.mark_unfit(rows)
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
        for enc in sorted(cells[task], key=runs.series_order):
            out.append(enc.ljust(width) + "".join(f"{t:>{col}}" for t in texts[enc]))
        out.append("")
    if any(runs.is_unfit_series(e) for task in cells.values() for e in task):
        out.append(f"(unfit): {_UNFIT_MEANING}")
    if partial:
        out.append("*: some seeds failed (see the failed runs); the mean covers the others.")
    if tags:
        out.append("[code X]: runs of different code versions, kept apart (see the warning).")
    if partial or tags or out[-1] != "":
        out.append("")
    return "\n".join(out)


def per_length_tables(rows: list[dict[str, Any]]) -> str:
    """`summary_table` of every plotted metric that some row carries (bits per byte only for
    byte-level text), one after the other."""
    shown = [m for m in metrics.plotted() if any(r.get(m) is not None for r in rows)]
    return "\n".join(summary_table(rows, m) for m in shown)


def mean_and_spread(values: list[float], digits: int = 3) -> str:
    """Mean, then the sample std (3+ values) or [min, max] (2 values), to `digits` decimals."""
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    if len(values) == 2:
        return f"{mean:.{digits}f} [{min(values):.{digits}f}, {max(values):.{digits}f}]"
    return f"{mean:.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def markdown_table(header: list[str], body: list[list[str]]) -> list[str]:
    """The lines of a markdown table, each column padded to its widest cell."""
    widths = [max(len(r[j]) for r in [header, *body]) for j in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return [line(header), line(["-" * w for w in widths]), *map(line, body)]


_UNFIT_MEANING = (
    "runs that did not learn their task (exact match at the training length below "
    "train.fit_threshold); their numbers beyond it say nothing about the encoding."
)


def _generalization_body(
    rows: list[dict[str, Any]], metric: str, tags: dict[str, str]
) -> tuple[list[list[str]], list[str]]:
    """The lines of the generalization table (one per task x series x training length) and
    its notes."""
    cells: dict[tuple[str, str, int], dict[int, _Cell]] = defaultdict(lambda: defaultdict(_Cell))
    seeds: dict[tuple[str, str, int], dict[str, int]] = defaultdict(dict)
    failed: dict[tuple[str, str, int], set[str]] = defaultdict(set)
    fit_scores: dict[tuple[str, str, int], dict[str, float]] = defaultdict(dict)
    for row in rows:
        key = (row["task"], _series(row, tags), row["train_length"])
        cells[key][row["length"]].add(row, metric)
        seeds[key][row["run"]] = row["seed"]
        if is_failed_row(row):
            failed[key].add(row["run"])
        if row.get("fit_exact_match") is not None:
            fit_scores[key][row["run"]] = row["fit_exact_match"]
    body, notes = [], []
    for key in sorted(cells, key=lambda k: (k[0], runs.series_order(k[1]), k[2])):
        task, encoding, train_length = key
        by_length = cells[key]
        n_in = in_distribution_length(set(by_length), train_length)
        in_dist = "-" if n_in is None else by_length[n_in].text(mean_and_spread)
        if n_in is not None and n_in != train_length:
            in_dist += f" (at {n_in})"
        runs_text = str(len(seeds[key])) + (f" ({len(failed[key])} failed)" if failed[key] else "")
        scores = list(fit_scores[key].values())
        body.append(
            [task, encoding, str(train_length), runs_text]
            + [mean_and_spread(scores) if scores else "-", in_dist]
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
    return body, notes


def fit_line(row: dict[str, Any]) -> str:
    """One line on whether the run of a result row learned its task."""
    if row.get("fit") is None:
        return "Fit: no verdict (the task has no exact match, or its training length was not "\
            "evaluated)."  # fmt: skip
    verdict = "fit" if row["fit"] else "NOT fit: its numbers beyond the training length say " \
        "nothing about the encoding"  # fmt: skip
    step = f", first fit at step {row['fit_step']}" if row.get("fit_step") is not None else ""
    return (
        f"Fit: exact match {row['fit_exact_match']:.3f} at the training length (threshold "
        f"{row['fit_threshold']:g}): {verdict}{step}."
    )


def fit_count(rows: list[dict[str, Any]]) -> tuple[int, int]:
    """(runs that fit, runs with a fit verdict) among the rows."""
    verdicts = {row["run"]: row.get("fit") for row in rows}
    judged = [v for v in verdicts.values() if v is not None]
    return sum(judged), len(judged)


def generalization_table(rows: list[dict[str, Any]], metric: str = metrics.DEFAULT_METRIC) -> str:
    """Markdown tables, one line per task x encoding (x training length, x code version when
    several): `metric` in distribution and at 2x, 4x, 8x the training length, mean and spread
    over seeds, and the exact match at the training length that the fit verdict reads.

    The first table compares the runs that fit (learned their task; runs.fit_verdict) and the
    runs without a verdict (byte_lm); the runs that did not fit follow in a table of their own,
    as "ENCODING (unfit)". Failed runs are counted in `runs` and read failed@step N where no
    seed finished; a warning comes first when rows come from different code versions."""
    m = metrics.get(metric)  # ValueError naming the known metrics
    tags = code_tags(rows)
    marked = runs.mark_unfit(rows)
    header = ["task", "encoding", "train length", "runs", "exact match at train length"]
    header += ["in-distribution", *(f"{k}x" for k in GENERALIZATION_MULTIPLES)]
    fit_body, notes = _generalization_body(
        [r for r in marked if r.get("fit") is not False], metric, tags
    )
    unfit_body, unfit_notes = _generalization_body(
        [r for r in marked if r.get("fit") is False], metric, tags
    )
    n_failed = len({row["run"] for row in rows if is_failed_row(row)})
    if n_failed:
        notes.append(
            f"Note: {n_failed} run{'s' if n_failed > 1 else ''} failed (see Failed runs): a "
            "cell reads failed@step N where every seed failed; elsewhere the means cover the "
            "runs that finished."
        )
    fit, judged = fit_count(rows)
    thresholds = sorted({r["fit_threshold"] for r in rows if r.get("fit") is not None})
    intro = (
        f"{metric} ({'higher' if m.higher_is_better else 'lower'} is better): {m.aggregate} over "
        "seeds (± sample std for 3+ seeds, [min, max] for 2). "
        "In-distribution: the training length, or the largest evaluated length below it; "
        "kx: k times the training length; -: not evaluated."
    )
    if judged:
        intro += (
            f"\n\n**Fit: {fit} of {judged} runs** learned their task (exact match at the "
            f"training length >= {'/'.join(f'{t:g}' for t in thresholds)}). Only those are "
            "compared here; the others follow apart."
        )
    warning = code_warning(rows)
    head = [warning, ""] if warning else []
    out = [*head, intro, "", *markdown_table(header, fit_body)] if fit_body else [*head, intro]
    if unfit_body:
        out += ["", f"Unfit runs, not a comparison of encodings: {_UNFIT_MEANING}", ""]
        out += markdown_table(header, unfit_body)
    return "\n".join([*out, *notes, *unfit_notes]) + "\n"


def steps_to_fit_table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of sample efficiency, for runs trained with train.stop_when_fit: per task
    x encoding, the first step at which each seed was fit (mean and spread over the seeds that
    fit), how many fit, and the step cap. "" when no run checked its fit."""
    checked = [r for r in rows if r.get("fit_checked") and not is_failed_row(r)]
    steps: dict[tuple[str, str], dict[str, int | None]] = defaultdict(dict)
    caps: dict[tuple[str, str], set[int]] = defaultdict(set)
    for row in checked:
        steps[(row["task"], row["encoding"])][row["run"]] = row.get("fit_step")
        caps[(row["task"], row["encoding"])].add(row["steps_cap"])
    body = []
    for key in sorted(steps):
        fit = [s for s in steps[key].values() if s is not None]
        body.append(
            [
                *key,
                f"{len(fit)}/{len(steps[key])}",
                mean_and_spread(fit, digits=0) if fit else "never",
                "/".join(str(c) for c in sorted(caps[key])),
            ]
        )
    if not body:
        return ""
    header = ["task", "encoding", "fit by the cap", "steps to fit", "step cap"]
    return "\n".join(markdown_table(header, body)) + "\n"


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


# -- published results beside ours ------------------------------------------------------------


def per_run_means(
    rows: list[dict[str, Any]], metric: str, lengths: Iterable[int]
) -> dict[tuple[str, str], list[tuple[float, bool | None]]]:
    """(task, encoding) -> one (mean of `metric` over the evaluation `lengths`, fit verdict) per
    finished run that was evaluated at all of them."""
    wanted = set(lengths)
    values: dict[str, dict[int, float]] = defaultdict(dict)
    meta: dict[str, tuple[str, str, bool | None]] = {}
    for row in rows:
        if is_failed_row(row) or row["length"] not in wanted:
            continue
        values[row["run"]][row["length"]] = row[metric]
        meta[row["run"]] = (row["task"], row["encoding"], row.get("fit"))
    out: dict[tuple[str, str], list[tuple[float, bool | None]]] = defaultdict(list)
    for run, by_length in values.items():
        if set(by_length) == wanted:
            task, encoding, fit = meta[run]
            out[(task, encoding)].append((statistics.fmean(by_length.values()), fit))
    return out


def _order_text(scores: dict[str, float], tie: float) -> str:
    """Encodings best first, `=` between neighbours within `tie` of each other."""
    names = sorted(scores, key=lambda e: -scores[e])
    text = names[0]
    for a, b in itertools.pairwise(names):
        text += (" = " if scores[a] - scores[b] <= tie else " > ") + b
    return text


def published_table(
    rows: list[dict[str, Any]],
    published: dict[tuple[str, str], float],
    *,
    metric: str,
    lengths: Iterable[int],
    source: str,
    tie: float = 0.05,
) -> str:
    """Markdown: a paper's numbers (task, encoding) -> value beside ours (mean ± std over seeds
    of each run's mean over `lengths`, with how many seeds fit), and per task a one-line
    verdict: whether the encodings come out in the paper's order, among fit runs only (pairs
    closer than `tie` in either count as ties)."""
    means = per_run_means(rows, metric, lengths)
    body, verdicts = [], []
    for task in sorted({t for t, _ in published}):
        paper = {e: v for (t, e), v in published.items() if t == task}
        here_fit = {}
        for encoding in sorted(paper, key=lambda e: -paper[e]):
            runs_here = means.get((task, encoding), [])
            fit = [m for m, f in runs_here if f is not False]
            all_text = mean_and_spread([m for m, _ in runs_here]) if runs_here else "not run"
            body.append([task, encoding, f"{paper[encoding]:.2f}", all_text,
                         f"{len(fit)}/{len(runs_here)}",
                         mean_and_spread(fit) if fit else "-"])  # fmt: skip
            if fit:
                here_fit[encoding] = statistics.fmean(fit)
        if len(here_fit) < 2:
            verdicts.append(f"- {task}: fewer than two encodings fit here; no order to compare.")
            continue
        shared = {e: paper[e] for e in here_fit}
        discordant = [
            f"{a} vs {b}"
            for a, b in itertools.combinations(sorted(here_fit), 2)
            if abs(shared[a] - shared[b]) > tie
            and abs(here_fit[a] - here_fit[b]) > tie
            and (shared[a] > shared[b]) != (here_fit[a] > here_fit[b])
        ]
        agree = "agrees" if not discordant else "differs (" + ", ".join(discordant) + ")"
        not_run = sorted(e for e in paper if not means.get((task, e)))
        unfit = sorted(set(paper) - set(here_fit) - set(not_run))
        verdicts.append(
            f"- {task}: paper {_order_text(shared, tie)}; here {_order_text(here_fit, tie)}: "
            f"order {agree}"
            + (f"; not fit here: {', '.join(unfit)}" if unfit else "")
            + (f"; not run here: {', '.join(not_run)}" if not_run else "")
            + "."
        )
    header = ["task", "encoding", "paper", "here, all seeds", "fit", "here, fit seeds"]
    intro = (
        f"{source}. Here: {metric} averaged over evaluation lengths "
        f"{', '.join(map(str, lengths))} per run, then mean ± std over seeds; fit: seeds that "
        "learned the task at the training length. Verdicts compare fit runs only."
    )
    return "\n".join([intro, "", *markdown_table(header, body), "", *verdicts]) + "\n"


def glance_table(
    rows: list[dict[str, Any]], metric: str = metrics.DEFAULT_METRIC, multiples=(2, 8)
) -> str:
    """Markdown: tasks x encodings, each cell `metric` at 2x / 8x the training length, the mean
    over the seeds that fit (with the fit count where some did not); where none did, "unfit"
    and its exact match at the training length (the mean over seeds)."""
    frame = pd.DataFrame([r for r in rows if not is_failed_row(r)])
    if frame.empty:
        return ""
    frame["multiple"] = frame["length"] / frame["train_length"]
    per_run = frame.groupby(["task", "encoding", "run"]).agg(
        fit=("fit", "first"), fit_exact_match=("fit_exact_match", "first")
    )
    fit = per_run.groupby(["task", "encoding"])["fit"].agg(["sum", "count"]).astype(int)
    at_fit = per_run.groupby(["task", "encoding"])["fit_exact_match"].mean()
    at = frame[frame["multiple"].isin(multiples) & frame["fit"].fillna(True).astype(bool)]
    means = at.pivot_table(index=["task", "encoding"], columns="multiple", values=metric)
    tasks = sorted(frame["task"].unique())
    encodings = sorted(frame["encoding"].unique())
    body = []
    for task in tasks:
        line = [task]
        for enc in encodings:
            if (task, enc) not in fit.index:
                line.append("-")
                continue
            n_fit, n = fit.loc[(task, enc)]
            if n_fit == 0:
                line.append(f"unfit ({at_fit.loc[(task, enc)]:.3f})")
                continue
            values = [means.loc[(task, enc)].get(float(k)) for k in multiples]
            text = " / ".join("-" if v is None or v != v else f"{v:.2f}" for v in values)
            line.append(text + (f" ({n_fit}/{n} fit)" if n_fit < n else ""))
        body.append(line)
    return "\n".join(markdown_table(["task", *encodings], body))
