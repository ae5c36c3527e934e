"""One table of every encoding on every task: fit counts, exact match and token accuracy at 1x,
2x, 4x and 8x the training length, sorted so that the encodings that generalize come first, and
a heatmap of the same; pure functions of a sweep's result rows (experiments/leaderboard.py).

A run counts only if it fit (learned its task at the training length, runs.fit_verdict): the
score of a task x encoding at k x is the mean over its seeds of the exact match at k x, an unfit
or failed seed counting 0, so an encoding that fits one seed in three cannot lead. The table's
means are over the fit seeds (with the fit count beside them); where no seed fit, the mean over
all seeds is shown in parentheses and is not a score.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from pe_research.runs.rows import in_distribution_length, is_failed_row
from pe_research.sweeps.summary import markdown_table

MULTIPLES = (1, 2, 4, 8)
"""Evaluation lengths of the table, as multiples of the training length (1x: the training
length, or the largest evaluated length below it)."""
SCORED = ("exact_match", "token_accuracy")


@dataclasses.dataclass(frozen=True)
class Entry:
    """One task x encoding: its runs, how many fit, and per metric and multiple the mean over fit
    runs (`fit_means`), over all finished runs (`all_means`) and the score (unfit = 0)."""

    task: str
    encoding: str
    runs: int
    fit: int
    fit_means: dict[str, dict[int, float]]
    all_means: dict[str, dict[int, float]]
    scores: dict[str, dict[int, float]]

    def text(self, metric: str, multiple: int) -> str:
        """The table cell: the mean over fit seeds, or '(mean over all)' where none fit."""
        if self.fit and multiple in self.fit_means[metric]:
            return f"{self.fit_means[metric][multiple]:.2f}"
        if multiple in self.all_means[metric]:
            return f"({self.all_means[metric][multiple]:.2f})"
        return "-"


def _run_values(rows: Iterable[dict[str, Any]]) -> dict[str, tuple[str, str, bool, dict]]:
    """run -> (task, encoding, fit, {metric: {multiple: value}}); a failed run has no values."""
    meta: dict[str, tuple[str, str, bool]] = {}
    at: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    train_length: dict[str, int] = {}
    for row in rows:
        meta[row["run"]] = (row["task"], row["encoding"], bool(row.get("fit")))
        if is_failed_row(row):
            continue
        train_length[row["run"]] = row["train_length"]
        for metric in SCORED:
            if row.get(metric) is not None:
                at[row["run"]][metric][row["length"]] = row[metric]
    out = {}
    for run, (task, encoding, fit) in meta.items():
        by_metric: dict[str, dict[int, float]] = {metric: {} for metric in SCORED}
        for metric, by_length in at.get(run, {}).items():
            n_in = in_distribution_length(set(by_length), train_length[run])
            for k in MULTIPLES:
                n = n_in if k == 1 else k * train_length[run]
                if n in by_length:
                    by_metric[metric][k] = by_length[n]
        out[run] = (task, encoding, fit, by_metric)
    return out


def entries(rows: Iterable[dict[str, Any]]) -> list[Entry]:
    """Every task x encoding of the rows (one row per run x evaluation length), unsorted."""
    seeds: dict[tuple[str, str], list[tuple[bool, dict[str, dict[int, float]]]]] = defaultdict(list)
    for task, encoding, fit, values in _run_values(rows).values():
        seeds[(task, encoding)].append((fit, values))
    out = []
    for (task, encoding), runs in seeds.items():
        fit_means: dict[str, dict[int, float]] = {m: {} for m in SCORED}
        all_means: dict[str, dict[int, float]] = {m: {} for m in SCORED}
        scores: dict[str, dict[int, float]] = {m: {} for m in SCORED}
        for metric in SCORED:
            for k in MULTIPLES:
                fit_values = [v[metric][k] for fit, v in runs if fit and k in v[metric]]
                all_values = [v[metric][k] for _, v in runs if k in v[metric]]
                if fit_values:
                    fit_means[metric][k] = statistics.fmean(fit_values)
                if all_values:
                    all_means[metric][k] = statistics.fmean(all_values)
                scores[metric][k] = sum(fit_values) / len(runs)
        fit = sum(f for f, _ in runs)
        out.append(Entry(task, encoding, len(runs), fit, fit_means, all_means, scores))
    return out


def order(
    table: list[Entry], metric: str = "exact_match", multiple: int = 2
) -> tuple[list[str], list[str]]:
    """(encodings, tasks), each best first by its mean score at `multiple` over the other axis
    (a pair that was not run counts 0): the encodings that generalize on most tasks first, the
    tasks most encodings generalize on first; ties by name."""
    encodings = sorted({e.encoding for e in table})
    tasks = sorted({e.task for e in table})
    score = {(e.task, e.encoding): e.scores[metric][multiple] for e in table}
    by_encoding = {
        enc: statistics.fmean(score.get((t, enc), 0.0) for t in tasks) for enc in encodings
    }
    by_task = {t: statistics.fmean(score.get((t, enc), 0.0) for enc in encodings) for t in tasks}
    return (
        sorted(encodings, key=lambda enc: (-by_encoding[enc], enc)),
        sorted(tasks, key=lambda t: (-by_task[t], t)),
    )


def at_a_glance(rows: Iterable[dict[str, Any]], metric: str = "exact_match") -> str:
    """Markdown: encodings (rows, best first) x tasks (columns, easiest first), each cell the
    score at 2x / 8x and the fit count."""
    table = entries(rows)
    encodings, tasks = order(table, metric)
    cells = {(e.task, e.encoding): e for e in table}
    body = []
    for enc in encodings:
        line = [enc]
        for task in tasks:
            e = cells.get((task, enc))
            line.append(
                "not run"
                if e is None
                else f"{e.scores[metric][2]:.2f} / {e.scores[metric][8]:.2f} ({e.fit}/{e.runs})"
            )
        body.append(line)
    intro = (
        f"Score: {metric} at 2x / 8x the training length, mean over seeds with an unfit seed "
        "counting 0; (fit seeds / runs). Encodings are sorted by their mean score at 2x over "
        "the tasks, tasks by theirs over the encodings."
    )
    return "\n".join([intro, "", *markdown_table(["encoding", *tasks], body)]) + "\n"


def full_table(rows: Iterable[dict[str, Any]]) -> str:
    """Markdown: one line per task x encoding (tasks and encodings in `order`), fit count and
    both metrics at every multiple, means over fit seeds ("(x)": no seed fit, mean over all)."""
    table = entries(rows)
    encodings, tasks = order(table)
    cells = {(e.task, e.encoding): e for e in table}
    header = ["task", "encoding", "fit"]
    header += [f"{m.replace('_', ' ')} {k}x" for m in SCORED for k in MULTIPLES]
    body = [
        [task, enc, f"{e.fit}/{e.runs}", *(e.text(m, k) for m in SCORED for k in MULTIPLES)]
        for task in tasks
        for enc in encodings
        if (e := cells.get((task, enc))) is not None
    ]
    intro = (
        "Means over the seeds that fit; (x): no seed fit, the mean over all seeds, not a "
        "comparison; -: not evaluated at that length."
    )
    return "\n".join([intro, "", *markdown_table(header, body)]) + "\n"


def best_per_task(
    rows: Iterable[dict[str, Any]],
    claims: dict[str, str] | None = None,
    metric: str = "exact_match",
) -> str:
    """Markdown: per task, the encoding with the best score at 2x and at 8x (with its fit count)
    and, where given, a published claim about the task beside it. Encodings whose score shows
    the same as the best (to 2 decimals) share the cell, best first: a tie is not a win."""
    table = entries(rows)
    _, tasks = order(table, metric)
    body = []
    for task in tasks:
        line = [task]
        for k in (2, 8):
            candidates = [e for e in table if e.task == task]
            candidates.sort(key=lambda e: (-e.scores[metric][k], e.encoding))
            top = f"{candidates[0].scores[metric][k]:.2f}"
            tied = [e for e in candidates if f"{e.scores[metric][k]:.2f}" == top]
            if candidates[0].scores[metric][k] == 0:
                line.append("none generalizes (0.00)")
            elif len({(e.fit, e.runs) for e in tied}) == 1:
                names = ", ".join(e.encoding for e in tied)
                line.append(f"{names}: {top} ({tied[0].fit}/{tied[0].runs} fit)")
            else:
                line.append(
                    ", ".join(f"{e.encoding} ({e.fit}/{e.runs} fit)" for e in tied) + f": {top}"
                )
        body.append([*line, claims.get(task, "")] if claims else line)
    header = ["task", f"best at 2x ({metric} score)", "best at 8x"]
    header += ["published"] if claims else []
    return "\n".join(markdown_table(header, body)) + "\n"


def leaderboard_figure(
    rows: Iterable[dict[str, Any]], metric: str = "exact_match", multiples: tuple[int, ...] = (2, 8)
) -> Figure:
    """Heatmaps of the score at each of `multiples`: encodings (best first) x tasks (easiest
    first), annotated with the score and, where not every seed fit, the fit count."""
    table = entries(rows)
    if not table:
        raise ValueError("No finished runs: nothing to draw in the leaderboard.")
    encodings, tasks = order(table, metric)
    cells = {(e.task, e.encoding): e for e in table}
    width = 0.55 * len(tasks) + 2.6
    height = 0.32 * len(encodings) + 1.6
    fig = Figure(figsize=(width * len(multiples), height))
    axes = fig.subplots(1, len(multiples), squeeze=False)[0]
    for ax, k in zip(axes, multiples, strict=True):
        score_ET = np.full((len(encodings), len(tasks)), np.nan)
        for (task, enc), entry in cells.items():
            score_ET[encodings.index(enc), tasks.index(task)] = entry.scores[metric][k]
        image = ax.imshow(score_ET, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
        for (e, t), value in np.ndenumerate(score_ET):
            if not np.isfinite(value):
                continue
            entry = cells[(tasks[t], encodings[e])]
            label = f"{value:.2f}"
            if entry.fit < entry.runs:
                label += f"\n{entry.fit}/{entry.runs}"
            color = "black" if value > 0.6 else "white"
            ax.text(t, e, label, ha="center", va="center", fontsize=5.5, color=color)
        ax.set_xticks(range(len(tasks)), tasks, rotation=40, ha="right", fontsize=8)
        ax.set_yticks(range(len(encodings)), encodings, fontsize=8)
        ax.set_title(f"{metric.replace('_', ' ')} at {k}x the training length", fontsize=9)
        fig.colorbar(image, ax=ax, shrink=0.6, label="mean over seeds, unfit seeds = 0")
    fig.tight_layout()
    return fig
