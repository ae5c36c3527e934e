"""Figures as pure functions of result rows (see `results.eval_rows`): rows in, Figure out."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: figures are written to files, never shown

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

METRICS = {"token_accuracy": "token accuracy", "exact_match": "sequence exact match"}


def extrapolation_figure(rows: Iterable[dict[str, Any]], metric: str = "token_accuracy") -> Figure:
    """Metric vs evaluation length: one panel per task, one line per encoding (mean over seeds,
    band from min to max), the training length marked by a dashed line."""
    if metric not in METRICS:
        raise ValueError(f"Unknown metric {metric!r}; choose one of {list(METRICS)}.")
    rows = list(rows)
    if not rows:
        raise ValueError("No result rows to plot.")
    by_task: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    train_lengths: dict[str, set[int]] = defaultdict(set)
    for row in rows:
        by_task[row["task"]][row["encoding"]][row["length"]].append(row[metric])
        train_lengths[row["task"]].add(row["train_length"])

    task_names = sorted(by_task)
    fig, axes = plt.subplots(
        1, len(task_names), figsize=(4.2 * len(task_names), 3.6), squeeze=False, sharey=True
    )
    encodings = sorted({enc for t in by_task.values() for enc in t})
    colors = {enc: plt.cm.tab10(i % 10) for i, enc in enumerate(encodings)}
    for ax, task in zip(axes[0], task_names, strict=True):
        for enc, by_length in sorted(by_task[task].items()):
            lengths = np.array(sorted(by_length))
            values = [np.asarray(by_length[n]) for n in lengths]
            mean = np.array([v.mean() for v in values])
            ax.plot(lengths, mean, marker="o", ms=3, label=enc, color=colors[enc])
            if max(len(v) for v in values) > 1:
                lo = np.array([v.min() for v in values])
                hi = np.array([v.max() for v in values])
                ax.fill_between(lengths, lo, hi, alpha=0.2, color=colors[enc], linewidth=0)
        for n in sorted(train_lengths[task]):
            ax.axvline(n, color="gray", linestyle="--", linewidth=1)
        ax.set_title(task)
        ax.set_xlabel("evaluation length (symbols); dashed: training length")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(METRICS[metric])
    axes[0][-1].legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def save(fig: Figure, path) -> None:
    """Save a figure (format from the suffix: .png, .pdf, .svg) and close it."""
    fig.savefig(path, dpi=130)
    plt.close(fig)
