"""Tidy rows of finished runs (one per run x evaluation length), read from their directories;
pe_research.results makes the tables from them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pe_research.config import RunConfig, series_label, task_label
from pe_research.metrics import METRICS
from pe_research.runs.directory import EVAL, FIT, failure, load_config, read_versions
from pe_research.runs.files import read_jsonl
from pe_research.runs.provenance import code_version


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


def fit_verdict(cfg: RunConfig, rows: list[dict[str, Any]]) -> bool | None:
    """Whether a run learned its task: its exact match at `cfg.fit_length` (the training length)
    is at least `train.fit_threshold`. None when the task has no exact match (byte_lm) or that
    length was not evaluated."""
    if not cfg.task.has_exact_match:
        return None
    at = [r for r in rows if r.get("length") == cfg.fit_length and "exact_match" in r]
    return bool(at[0]["exact_match"] >= cfg.train.fit_threshold) if at else None


def _fit_checks(run_dir: Path) -> list[dict[str, Any]]:
    """The rows of a run's fit.jsonl, [] if it was not checked (no train.stop_when_fit)."""
    path = Path(run_dir) / FIT
    return read_jsonl(path) if path.exists() else []


def _first_fit(checks: list[dict[str, Any]], cfg: RunConfig) -> int | None:
    return next(
        (int(r["step"]) for r in checks if r["exact_match"] >= cfg.train.fit_threshold), None
    )


def first_fit_step(run_dir: Path, cfg: RunConfig) -> int | None:
    """The step of the first fit check (fit.jsonl, written under train.stop_when_fit) whose
    exact match reached the threshold; None if none did or the run was not checked."""
    return _first_fit(_fit_checks(run_dir), cfg)


def eval_rows(run_dirs: Iterable[Path]) -> Iterator[dict[str, Any]]:
    """Tidy rows: one per run x evaluation length, labelled with the run's task, encoding and
    code version, and its fit verdict (`fit`, `fit_step`, `fit_exact_match`)."""
    for run_dir in run_dirs:
        cfg = load_config(run_dir)
        rows = read_jsonl(Path(run_dir) / EVAL)
        fit = fit_verdict(cfg, rows)
        checks = _fit_checks(run_dir)
        labels = {
            **_labels(run_dir, cfg),
            "fit": fit,
            "fit_step": _first_fit(checks, cfg),
            "fit_exact_match": None
            if fit is None
            else next(r["exact_match"] for r in rows if r.get("length") == cfg.fit_length),
            "fit_checked": cfg.train.stop_when_fit,
            "fit_threshold": cfg.train.fit_threshold,
            "steps_cap": cfg.train.steps,
        }
        for row in rows:
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
                "fit": None,
                "fit_step": None,
                "failed_step": record["step"],
                "failure": record["reason"],
            }


def is_failed_row(row: dict[str, Any]) -> bool:
    """Whether a result row stands for a failed run (it has no numbers, see `failed_rows`)."""
    return row.get("failed_step") is not None


GENERALIZATION_MULTIPLES = (2, 4, 8)
"""Summaries and the essay's Pr3 compare these multiples of the training length with it."""


def in_distribution_length(lengths: set[int], train_length: int) -> int | None:
    """The training length if evaluated, else the largest evaluated length below it."""
    below = [n for n in lengths if n <= train_length]
    return max(below) if below else None


UNFIT = " (unfit)"
"""Appended to the series label of a run that did not fit, by `mark_unfit`."""


def mark_unfit(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with " (unfit)" appended to the encoding of every run that did not learn its task
    (`fit` False), so tables and plots keep them apart from the runs they can compare: an
    unfit run's extrapolation curve says nothing about its encoding."""
    return [{**r, "encoding": r["encoding"] + UNFIT} if r.get("fit") is False else r for r in rows]


def is_unfit_series(name: str) -> bool:
    return name.endswith(UNFIT)


def series_order(name: str) -> tuple[bool, str]:
    """Sort key of series in tables and plots: the fit series first, then the unfit ones."""
    return is_unfit_series(name), name
