"""Figures as pure functions of result rows (see `runs.eval_rows`): rows in, Figure out.

A row may carry `chance`, the score of guessing: a number (the chance level of the metric being
plotted) or a dict metric -> number. Line plots draw it as a dotted line where present.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from pe_research import metrics, results, runs
from pe_research.runs.rows import is_failed_row

# task -> encoding -> evaluation length -> values (one per seed)
Table = dict[str, dict[str, dict[int, list[float]]]]


def without_failed(rows: Iterable[dict[str, Any]], warn: bool = True) -> list[dict[str, Any]]:
    """The rows of runs that finished; failed runs (see summary.failed_runs) have no numbers to
    draw, so they are left out, with a warning naming them if `warn`."""
    rows = list(rows)
    failed = sorted(
        {f"{r['task']} / {r['encoding']} seed {r['seed']}" for r in rows if is_failed_row(r)}
    )
    if failed and warn:
        warnings.warn(
            f"the plots leave out {len(failed)} failed run(s), which have no numbers: "
            f"{'; '.join(failed)} (summary.md lists them with the step and reason).",
            stacklevel=3,
        )
    return [r for r in rows if not is_failed_row(r)]


def _check(rows: Iterable[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """The rows to draw: finished runs, those that did not fit labelled "ENCODING (unfit)"."""
    metrics.get(metric, plot=True)  # ValueError naming the metrics that plots draw
    rows = without_failed(rows)
    if not rows:
        raise ValueError("No result rows to plot.")
    return runs.mark_unfit(rows)


def _base(name: str) -> str:
    """The encoding of a series: an unfit run keeps the colour of its encoding."""
    return name.removesuffix(runs.UNFIT)


def _table(rows: list[dict[str, Any]], metric: str) -> Table:
    table: Table = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for row in rows:
        table[row["task"]][row["encoding"]][row["length"]].append(row[metric])
    return table


def _chance(row: dict[str, Any], metric: str) -> float | None:
    chance = row.get("chance")
    if isinstance(chance, dict):
        chance = chance.get(metric)
    return None if chance is None else float(chance)


def _panels(num: int, width: float, height: float, max_cols: int | None = None, **kwargs: Any):
    """A figure of `num` panels of `width` x `height` inches, in rows of at most `max_cols` (one
    row if None), and its axes row by row. A sweep of every task (the leaderboard's 13) would
    otherwise be one row some 60 inches wide."""
    cols = num if max_cols is None else min(num, max_cols)
    rows = -(-num // cols)
    # Figures drawn by Agg without pyplot: no global backend to set, no figures to close.
    fig = Figure(figsize=(width * cols, height * rows))
    FigureCanvasAgg(fig)
    axes = list(fig.subplots(rows, cols, squeeze=False, **kwargs).flat)
    for spare in axes[num:]:
        spare.remove()
    return fig, axes[:num], cols


def _styles(names: list[str]) -> dict[str, dict[str, Any]]:
    """A colour and marker per name, no two the same for up to 100 names: ten colours while they
    suffice, then twenty, and a new marker for each further twenty (a leaderboard draws 28)."""
    palette = matplotlib.colormaps["tab10" if len(names) <= 10 else "tab20"]
    markers = "os^Dv"
    return {
        name: {"color": palette(i % palette.N), "marker": markers[(i // palette.N) % len(markers)]}
        for i, name in enumerate(names)
    }


def extrapolation_figure(
    rows: Iterable[dict[str, Any]], metric: str = metrics.DEFAULT_METRIC
) -> Figure:
    """Metric vs evaluation length: one panel per task, one line per encoding (mean over seeds,
    band from min to max), the training length dashed, chance dotted where rows give it. Runs
    that did not fit their task are drawn apart, faded and dashed, as "ENCODING (unfit)"."""
    rows = _check(rows, metric)
    table = _table(rows, metric)
    train_lengths: dict[str, set[int]] = defaultdict(set)
    chance: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        train_lengths[row["task"]].add(row["train_length"])
        if (value := _chance(row, metric)) is not None:
            chance[row["task"]][row["length"]].append(value)

    task_names = sorted(table)
    fig, axes, cols = _panels(len(task_names), 4.2, 3.6, max_cols=4, sharey=True)
    styles = _styles(sorted({_base(enc) for t in table.values() for enc in t}))
    for ax, task in zip(axes, task_names, strict=True):
        for enc in sorted(table[task], key=runs.series_order):
            by_length = table[task][enc]
            lengths = np.array(sorted(by_length))
            values = [np.asarray(by_length[n]) for n in lengths]
            mean = np.array([v.mean() for v in values])
            unfit = runs.is_unfit_series(enc)
            style = styles[_base(enc)]
            color = style["color"]
            ax.plot(
                lengths, mean, ms=3, label=enc, **style,
                alpha=0.35 if unfit else 1.0, linestyle="--" if unfit else "-",
            )  # fmt: skip
            if max(len(v) for v in values) > 1:
                lo = np.array([v.min() for v in values])
                hi = np.array([v.max() for v in values])
                band = 0.08 if unfit else 0.2
                ax.fill_between(lengths, lo, hi, alpha=band, color=color, linewidth=0)
        for n in sorted(train_lengths[task]):
            ax.axvline(n, color="gray", linestyle="--", linewidth=1)
        if chance[task]:
            lengths = sorted(chance[task])
            level = [np.mean(chance[task][n]) for n in lengths]
            ax.plot(lengths, level, color="black", linestyle=":", linewidth=1, label="chance")
        ax.set_title(task)
        ax.set_xlabel("evaluation length (symbols); dashed: training length")
        if metrics.METRICS[metric].bounded:
            ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes[::cols]:
        ax.set_ylabel(metrics.METRICS[metric].label)
    # Every panel's series (an unfit run may be in one task only), once each, chance last.
    # Beside the panels, not over them, the figure widened to hold it (labels with
    # evaluation-time scalings are long), in as many columns as keep it within the figure's
    # height (a sweep of every encoding has some 40 series).
    handles = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    labels = sorted(handles, key=lambda label: (label == "chance", runs.series_order(label)))
    renderer = fig.canvas.get_renderer()
    for ncol in range(1, len(labels) + 1):
        legend = fig.legend(
            [handles[label] for label in labels], labels, fontsize=8, loc="upper right",
            bbox_to_anchor=(1.0, 1.0), ncol=ncol,
        )  # fmt: skip
        extent = legend.get_window_extent(renderer)
        if extent.height <= 0.98 * fig.bbox.height or ncol == len(labels):
            break
        legend.remove()
    strip = extent.width / fig.dpi + 0.1  # inches
    fig.set_figwidth(fig.get_figwidth() + strip)
    fig.tight_layout(rect=(0, 0, 1 - strip / fig.get_figwidth(), 1))
    return fig


def heatmap_figure(rows: Iterable[dict[str, Any]], metric: str = metrics.DEFAULT_METRIC) -> Figure:
    """Encodings x evaluation lengths, the cell the mean over seeds (annotated); one panel per
    task. A length an encoding was not evaluated at is left blank; unfit runs are rows of their
    own, "ENCODING (unfit)", below the others."""
    rows = _check(rows, metric)
    table = _table(rows, metric)
    task_names = sorted(table)
    sizes = [
        (len(table[t]), len({n for by_length in table[t].values() for n in by_length}))
        for t in task_names
    ]
    width = max(3.0, 0.55 * max(cols for _, cols in sizes) + 1.8)
    height = max(2.4, 0.4 * max(encs for encs, _ in sizes) + 1.4)
    fig, axes, cols = _panels(len(task_names), width, height, max_cols=4)
    values = np.array([row[metric] for row in rows], dtype=float)
    bounded = metrics.METRICS[metric].bounded
    vmin, vmax = (0.0, 1.0) if bounded else (np.nanmin(values), np.nanmax(values))
    for ax, task in zip(axes, task_names, strict=True):
        encodings = sorted(table[task], key=runs.series_order)
        lengths = sorted({n for by_length in table[task].values() for n in by_length})
        mean_EN = np.full((len(encodings), len(lengths)), np.nan)
        for e, enc in enumerate(encodings):
            for i, n in enumerate(lengths):
                if values := table[task][enc].get(n):
                    mean_EN[e, i] = np.mean(values)
        image = ax.imshow(mean_EN, vmin=vmin, vmax=vmax, cmap="viridis", aspect="auto")
        for (e, i), value in np.ndenumerate(mean_EN):
            if np.isfinite(value):
                # Dark text on the bright end of viridis, light text elsewhere.
                color = "black" if value > vmin + 0.6 * (vmax - vmin) else "white"
                ax.text(i, e, f"{value:.2f}", ha="center", va="center", fontsize=7, color=color)
        ax.set_xticks(range(len(lengths)), [str(n) for n in lengths])
        ax.set_yticks(range(len(encodings)), encodings)
        ax.set_xlabel("evaluation length (symbols)")
        ax.set_title(task)
        label = f"{metrics.METRICS[metric].label} ({metrics.METRICS[metric].aggregate} over seeds)"
        fig.colorbar(image, ax=ax, label=label, shrink=0.9)
    # Widen the figure for encoding labels longer than the width budgeted for them (labels with
    # evaluation-time scalings are long).
    renderer = fig.canvas.get_renderer()
    for ax in axes[:cols]:
        label_width = max(t.get_window_extent(renderer).width for t in ax.get_yticklabels())
        fig.set_figwidth(fig.get_figwidth() + max(0.0, label_width / fig.dpi - 0.9))
    fig.tight_layout()
    return fig


def steps_to_fit_figure(rows: Iterable[dict[str, Any]]) -> Figure:
    """Sample efficiency, from runs trained with train.stop_when_fit: per task, the step at which
    each seed of each encoding first fit (a dot per seed, a bar at their mean); a seed that never
    fit is a hollow marker at its step cap, labelled "not fit" (under the panel where more
    than ten encodings leave no room beside each marker)."""
    rows = [r for r in without_failed(rows) if r.get("fit_checked")]
    if not rows:
        raise ValueError("No run was trained with train.stop_when_fit: no steps to fit to plot.")
    seeds: dict[str, dict[str, dict[str, tuple[int | None, int]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for row in rows:
        seeds[row["task"]][row["encoding"]][row["run"]] = (row.get("fit_step"), row["steps_cap"])
    task_names = sorted(seeds)
    most = max(len(encodings) for encodings in seeds.values())
    crowded = most > 10  # labels upright and small, "not fit" said once under the panel
    width = max(4.2, 0.24 * most + 0.8)
    fig, axes, cols = _panels(len(task_names), width, 3.4, max_cols=4, sharey=True)
    styles = _styles(sorted({enc for t in seeds.values() for enc in t}))
    colors = {enc: style["color"] for enc, style in styles.items()}
    for ax, task in zip(axes, task_names, strict=True):
        names = sorted(seeds[task])
        for x, enc in enumerate(names):
            fit = [s for s, _ in seeds[task][enc].values() if s is not None]
            never = [cap for s, cap in seeds[task][enc].values() if s is None]
            if fit:
                ax.bar(x, np.mean(fit), color=colors[enc], alpha=0.5, width=0.6)
                ax.plot([x] * len(fit), fit, "o", color=colors[enc], ms=4)
            if never:
                ax.plot([x] * len(never), never, "o", mfc="none", color=colors[enc], ms=7)
                if not crowded:
                    ax.annotate("not fit", (x, max(never)), ha="center", va="top", fontsize=7,
                                xytext=(0, -8), textcoords="offset points")  # fmt: skip
        if crowded:
            ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
            ax.set_xlabel("hollow marker: a seed not fit by the step cap", fontsize=8)
        else:
            ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
        ax.set_title(task)
        ax.grid(alpha=0.3, axis="y")
    caps = [cap for t in seeds.values() for e in t.values() for _, cap in e.values()]
    axes[0].set_ylim(0, 1.08 * max(caps))
    for ax in axes[::cols]:
        ax.set_ylabel("steps to fit")
    fig.tight_layout()
    return fig


FIGURES = {"lines": extrapolation_figure, "heatmap": heatmap_figure}
FIGURE_STEMS = {"lines": "extrapolation", "heatmap": "heatmap"}
_KINDS = {stem: kind for kind, stem in FIGURE_STEMS.items()}


Series = tuple[str, list[int], list[float], bool]
"""(label, lengths, values, is_paper): one line of a reproduction's headline figure."""


def headline_figure(panels: dict[str, list[Series]], xlabel: str = "evaluation length") -> Figure:
    """A paper's figure on our axes: one panel per title, each series a line, the paper's
    dashed with open markers and ours solid, one colour per label across the two, and one
    legend for all panels below them."""
    titles = list(panels)
    handles: dict[str, Any] = {}
    for series in panels.values():
        for label, _, _, is_paper in series:
            handles.setdefault(f"{label} ({'paper' if is_paper else 'here'})", None)
    # As many legend columns as fit the figure's width (about 0.055 in a character at size 7).
    column_in = 0.055 * max(map(len, handles)) + 0.5
    ncol = max(1, min(len(handles), int(4.2 * len(titles) // column_in)))
    legend_in = 0.17 * -(-len(handles) // ncol) + 0.15  # the legend's rows, in inches
    fig, axes, _ = _panels(len(titles), 4.2, 3.2 + legend_in, sharey=True)
    styles = _styles(sorted({s[0] for series in panels.values() for s in series}))
    colors = {label: style["color"] for label, style in styles.items()}
    for ax, title in zip(axes, titles, strict=True):
        for label, xs, ys, is_paper in panels[title]:
            name = f"{label} ({'paper' if is_paper else 'here'})"
            (handles[name],) = ax.plot(
                xs, ys, color=colors[label], linestyle="--" if is_paper else "-", marker="o",
                markersize=3 if len(xs) > 1 else 6, linewidth=1.2,
                markerfacecolor="none" if is_paper else colors[label], label=name,
            )  # fmt: skip
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylim(-0.03, 1.03)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=ncol, fontsize=7,
               frameon=False)  # fmt: skip
    fig.tight_layout(rect=(0, legend_in / fig.get_figheight(), 1, 1))
    return fig


def save(fig: Figure, path, dpi: int = 130) -> None:
    """Save a figure (format from the suffix: .png, .pdf, .svg), without the matplotlib version
    in its metadata, so that the same figure drawn by another version gives the same file."""
    fig.savefig(path, dpi=dpi, metadata={"Software": None} if str(path).endswith(".png") else {})


def plot_runs(
    paths: Iterable[Path | str],
    out: Path | str,
    metric: str = metrics.DEFAULT_METRIC,
    kind: str = "lines",
) -> list[dict[str, Any]]:
    """Draw `kind` of `metric` for the runs of `paths` (results folders or tables, or folders of
    run directories: results.load) into `out` (format from its suffix); returns the rows drawn."""
    frames = [results.load(p, strict=True) for p in paths]  # a damaged run fails, named
    rows = [r for frame in frames for r in results.as_rows(frame)]
    if not rows:
        raise ValueError(f"No finished runs under {', '.join(map(str, paths))}.")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    save(FIGURES[kind](rows, metric), out)
    return rows


def figure_stems(rows: Iterable[dict[str, Any]], shown: Iterable[str] | None = None) -> list[str]:
    """The file stems of `figures(rows, shown)`, drawing nothing."""
    rows = without_failed(rows, warn=False)
    if not rows:
        return []
    stems = [
        f"{FIGURE_STEMS[kind]}_{metric}"
        for kind in FIGURES
        for metric in (metrics.plotted() if shown is None else shown)
        if all(row.get(metric) is not None for row in rows)
    ]
    return stems + (["steps_to_fit"] if any(row.get("fit_checked") for row in rows) else [])


def figures(
    rows: Iterable[dict[str, Any]], shown: Iterable[str] | None = None
) -> dict[str, Figure]:
    """Every kind of figure for every metric all rows carry (or those `shown`), by file stem
    (<kind>_<metric>), and steps_to_fit where runs were trained until fit. Failed runs are left
    out."""
    rows = without_failed(rows, warn=False)
    out = {}
    for stem in figure_stems(rows, shown):
        if stem == "steps_to_fit":
            out[stem] = steps_to_fit_figure(rows)
        else:
            kind, metric = stem.split("_", 1)
            out[stem] = FIGURES[_KINDS[kind]](rows, metric)
    return out


def write_figures(
    rows: Iterable[dict[str, Any]], out_dir: Path | str, formats: Iterable[str] = ("png", "pdf")
) -> list[Path]:
    """`figures(rows)`, each in each format: OUT_DIR/<stem>.<format>. Failed runs are left out,
    with a warning; none are written if every run failed."""
    rows = without_failed(rows)
    out_dir = Path(out_dir)
    paths = []
    for stem, fig in figures(rows).items():
        out_dir.mkdir(parents=True, exist_ok=True)
        for fmt in formats:
            paths.append(out_dir / f"{stem}.{fmt}")
            save(fig, paths[-1])
    return paths
