"""Tidy rows of finished runs (one per run x evaluation length), and results.csv."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pe_research.config import RunConfig, series_label, task_label
from pe_research.metrics import METRICS
from pe_research.runs.directory import EVAL, failure, load_config, read_versions
from pe_research.runs.files import read_jsonl, write_atomic
from pe_research.runs.provenance import code_version

CSV_COLUMNS = (
    "task", "encoding", "seed", "train_length", "length",
    *METRICS, "failed_step", "code", "data", "run",
)  # fmt: skip
"""Columns of results.csv: the run's labels, every metric of `metrics.METRICS`, and more. A failed
run has one row per evaluation length with empty metrics and its `failed_step`; `code` is the
run's `code_version`; `bits_per_byte` is set for byte-level text (byte_lm) only; `data` is what
evaluation scored (a built set, a corpus split, or samples)."""


def _labels(run_dir: Path, cfg: RunConfig) -> dict[str, Any]:
    return {
        "run": str(run_dir),
        "task": task_label(cfg.task),
        "encoding": series_label(cfg),
        "seed": cfg.seed,
        "train_length": cfg.train.train_length,
        "chance": {"token_accuracy": 1.0 / cfg.task.alphabet},
        "code": code_version(read_versions(run_dir)),
    }


def eval_rows(run_dirs: Iterable[Path]) -> Iterator[dict[str, Any]]:
    """Tidy rows: one per run x evaluation length, labelled with the run's task, encoding and
    code version."""
    for run_dir in run_dirs:
        labels = _labels(run_dir, load_config(run_dir))
        for row in read_jsonl(Path(run_dir) / EVAL):
            yield {**labels, **row}


def failed_rows(run_dirs: Iterable[Path]) -> Iterator[dict[str, Any]]:
    """Rows of failed runs, one per evaluation length of their config: metrics None, and the
    step and reason of the failure (`failed_step`, `failure`), so that tables show them."""
    for run_dir in run_dirs:
        record = failure(run_dir)
        if record is None:
            continue
        cfg = load_config(run_dir)
        labels = _labels(run_dir, cfg)
        for n in cfg.eval_lengths:
            yield {
                **labels,
                "length": n,
                **dict.fromkeys(METRICS),
                "failed_step": record["step"],
                "failure": record["reason"],
            }


def write_csv(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """A tidy CSV (CSV_COLUMNS, one row per run x evaluation length) that pandas reads as is."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(Path(path), buf.getvalue())


def is_failed_row(row: dict[str, Any]) -> bool:
    """Whether a result row stands for a failed run (it has no numbers, see `failed_rows`)."""
    return row.get("failed_step") is not None


GENERALIZATION_MULTIPLES = (2, 4, 8)
"""Summaries and the essay's Pr3 compare these multiples of the training length with it."""


def in_distribution_length(lengths: set[int], train_length: int) -> int | None:
    """The training length if evaluated, else the largest evaluated length below it."""
    below = [n for n in lengths if n <= train_length]
    return max(below) if below else None
