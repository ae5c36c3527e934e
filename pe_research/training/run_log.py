"""The run log of a packed program: each run's metrics.jsonl (and fit.jsonl when training stops
once fit), eval.jsonl, its TensorBoard event file, and whether the run has failed.

Rows are appended as training goes; a run whose loss becomes NaN or inf is marked failed (its
FAILED file, with the step) and gets no more rows, and a run trained until fit gets none after
its first fit (its model is frozen there: `active_models`), as if it had trained alone. Rows
after the step a run resumes from (logged after the checkpoint it restarts at) are dropped
first, so the file reads as one run; the event file is then rebuilt from the rows kept
(runs.events) and takes each new row after its JSONL file has it, as does the W&B sink, if
one was given (runs.wandb_sink.LiveRuns).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from pe_research import runs
from pe_research.runs.wandb_sink import LiveRuns


class TrainingDiverged(FloatingPointError):
    pass


class RunLog:
    """Appends one row per logged step to the metrics.jsonl of each run of a packed program.

    `model_of[r]` is the model of the pack that run r reads its metrics from; runs that differ
    only in how they are evaluated share a model. Throughput is that of the whole program.
    """

    def __init__(
        self,
        run_dirs: list[Path],
        model_of: list[int],
        *,
        start: int,
        tokens_per_step: int,
        compile_s: float,
        log_every: int,
        learning_rate: float | list[float],
        fit_threshold: float | None = None,
        stop_threshold: float | None = None,
        select: bool = False,
        sink: LiveRuns | None = None,
    ):
        self.run_dirs, self.model_of = run_dirs, model_of
        self.tokens_per_step, self.compile_s = tokens_per_step, compile_s
        self.log_every, self.learning_rate = log_every, learning_rate
        self.num_models = len(set(model_of))
        self.failed: dict[int, int] = {}  # run -> step its loss was first seen non-finite
        self._last_step, self._last_time = start, time.perf_counter()
        self._t_start = self._last_time
        self._files = [_open_rows(d / runs.METRICS, start) for d in run_dirs]
        # fit.jsonl, one row per fit check, when training stops once fit (None: no checks).
        self.fit_threshold = fit_threshold
        self.stop_threshold = fit_threshold if stop_threshold is None else stop_threshold
        self._fit_files = (
            [] if fit_threshold is None else [_open_rows(d / runs.FIT, start) for d in run_dirs]
        )
        # run -> the step of its first fit check at or above the stop threshold, where it
        # stopped training (read back on resume).
        self.fit_at: dict[int, int] = {}
        if fit_threshold is not None:
            for r, d in enumerate(run_dirs):
                checks = runs.read_jsonl(d / runs.FIT)
                first = next(
                    (c["step"] for c in checks if c["exact_match"] >= self.stop_threshold), None
                )
                if first is not None:
                    self.fit_at[r] = first
        # select.jsonl, one row per validation check (train.select_best).
        self._select_files = (
            [_open_rows(d / runs.SELECT, start) for d in run_dirs] if select else []
        )
        self._events = [runs.open_events(d) for d in run_dirs]  # after the rows are cut back
        self.sink = sink  # takes every row after its file has it; finished on exit

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: Any) -> None:
        for f in self._files + self._fit_files + self._select_files + self._events:
            f.close()
        if self.sink is not None:
            self.sink.finish(exit_code=0 if exc[0] is None else 1)

    def live(self) -> list[int]:
        """Runs that have not failed."""
        return [r for r in range(len(self.run_dirs)) if r not in self.failed]

    def training(self, step: int) -> list[int]:
        """Live runs still training at `step`: not yet fit before it."""
        return [r for r in self.live() if self.fit_at.get(r, step) >= step]

    def active_models(self) -> np.ndarray:
        """[S] bools: which models of the pack still train. A model is frozen (its parameters
        and optimizer state kept) once every live run reading it is fit, or once all its runs
        failed, so that a packed seed stops where it would have stopped alone."""
        active = np.zeros(self.num_models, bool)
        for r in self.live():
            active[self.model_of[r]] |= r not in self.fit_at
        return active

    def write(self, step: int, metrics_S: dict[str, jax.Array]) -> dict[str, Any]:
        """Fetch the metrics of `step` (one step late) and append a row to the file of each run
        still training (`training`); returns the last row. TrainingDiverged once every run has
        failed."""
        metrics_S = jax.device_get(metrics_S)
        now = time.perf_counter()
        tok_s = (step - self._last_step) * self.tokens_per_step / (now - self._last_time)
        self._last_step, self._last_time = step, now
        row: dict[str, Any] = {}
        for r in self.training(step):
            row = {"step": step, **{m: float(v[self.model_of[r]]) for m, v in metrics_S.items()}}
            row.update(tokens_per_s=round(tok_s, 1), elapsed_s=round(now - self._t_start, 3))
            if self.num_models > 1:
                row["packed_runs"] = self.num_models
            if step <= self.log_every:
                row["compile_s"] = round(self.compile_s, 3)
            if not math.isfinite(row["loss"]):
                self._fail(r, step, row["loss"])
            self._append(r, row, self._files, runs.METRICS)
        if not self.live():
            raise TrainingDiverged(
                f"loss became non-finite by step {step} in every run of "
                f"{', '.join(str(d) for d in self.run_dirs)}; {self._advice(r)}."
            )
        return row

    def all_fit(self) -> bool:
        """Whether every live run has been found fit."""
        return all(r in self.fit_at for r in self.live())

    def write_fit(self, step: int, exact_match_S: Any, seconds: float) -> bool:
        """Append a fit-check row (step, exact match at the training length, whether it is fit,
        the check's seconds) to the fit.jsonl of each run still training, and record the runs
        that reached the stop threshold (the fit threshold unless set higher); returns
        `all_fit`."""
        for r in self.training(step):
            em = float(exact_match_S[self.model_of[r]])
            row = {"step": step, "exact_match": em, "fit": em >= self.fit_threshold}
            self._append(r, {**row, "check_s": round(seconds, 4)}, self._fit_files, runs.FIT)
            if em >= self.stop_threshold:
                self.fit_at[r] = step
        return self.all_fit()

    def write_select(self, step: int, score_S: Any, best_step_S: Any, best_S: Any) -> None:
        """Append a validation-check row (step, its exact match over the validation lengths, and
        the best step and score so far) to the select.jsonl of each run that has not failed."""
        for r in self.live():
            k = self.model_of[r]
            row = {
                "step": step,
                "exact_match": float(score_S[k]),
                "best_step": int(best_step_S[k]),
                "best_exact_match": float(best_S[k]),
            }
            self._append(r, row, self._select_files, runs.SELECT)

    def _fail(self, r: int, step: int, loss: float) -> None:
        self.failed[r] = step
        runs.mark_failed(
            self.run_dirs[r],
            step=step,
            reason=f"loss became {loss} by step {step}; {self._advice(r)}",
        )

    def _advice(self, r: int) -> str:
        rate = self.learning_rate
        rate = rate[r] if isinstance(rate, list) else rate  # one per run in a pack of rates
        return f"lower learning_rate (now {rate}) or raise warmup_steps"

    def write_eval(self, r: int, rows: list[dict[str, Any]]) -> None:
        """Write run r's eval.jsonl (one row per evaluation length), then its eval events."""
        runs.write_jsonl(self.run_dirs[r] / runs.EVAL, rows)
        for row in rows:
            self._events[r].add(runs.EVAL, row, flush=False)
        self._events[r].flush()
        if self.sink is not None:
            self.sink.add_eval(r, rows)

    def _append(self, r: int, row: dict[str, Any], files: list[Any], name: str) -> None:
        try:
            files[r].write(json.dumps(row) + "\n")
            files[r].flush()
        except OSError as e:  # a full disk says what to do, not just its errno
            raise runs.write_error(self.run_dirs[r] / name, e) from None
        self._events[r].add(name, row)
        if self.sink is not None:
            self.sink.add(r, name, row)


def _open_rows(path: Path, start: int):
    """A JSONL file of step rows (metrics.jsonl, fit.jsonl) for appending rows after `start`."""
    if start == 0:
        return open(path, "w")
    rows = [r for r in runs.read_jsonl(path) if r["step"] <= start] if path.exists() else []
    runs.write_jsonl(path, rows)
    return open(path, "a")
