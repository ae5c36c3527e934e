"""The TensorBoard view of a run directory: an event file rebuilt from the run's JSONL rows.

RUN_DIR/events.out.tfevents.*   one file per run, in the run directory itself, so that
                                `tensorboard --logdir SWEEP_DIR` names each run by its path
                                (task/encoding/seedN-hash)

Tags: `train/NAME` every number of a metrics.jsonl row (loss, token_accuracy, grad_norm,
tokens_per_s, ...) at its step; `fit/exact_match`, `fit/fit` (1 or 0) and `fit/check_s` each fit
check of fit.jsonl at its step; `eval/METRIC` each metric of `metrics.METRICS` in an eval.jsonl
row with the evaluation LENGTH as its step (so the chart of eval/exact_match is the
extrapolation curve); `config` (text, step 0) the run's config.json.

The JSONL files are the source of truth and the event file is a view: whenever training
(re)starts, the file is rebuilt from the rows on disk (after the resume dropped those past its
checkpoint), written under a temporary name and renamed, and the old event files are deleted;
rows are then appended as training writes them. So a kill and resume never leaves a duplicate or
an out-of-order step. Written with tensorboardX's record writer and protos (no TensorFlow).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from tensorboardX import summary
from tensorboardX.proto import event_pb2
from tensorboardX.record_writer import RecordWriter

from pe_research.metrics import METRICS as METRIC_NAMES
from pe_research.runs.directory import CONFIG, EVAL, FIT, METRICS, SELECT, finished_runs
from pe_research.runs.files import read_jsonl, temp_file, write_error

EVENTS = "events.out.tfevents"
"""TensorBoard reads every file with "tfevents" in its name; ours start with this."""

TAG_PREFIX = {METRICS: "train", FIT: "fit", SELECT: "select", EVAL: "eval"}
STEP_KEY = {METRICS: "step", FIT: "step", SELECT: "step", EVAL: "length"}


def event_files(run_dir: Path) -> list[Path]:
    """The event files of a run directory (one, unless a rebuild was interrupted)."""
    return sorted(Path(run_dir).glob(f"{EVENTS}*"))


def scalars(name: str, row: dict[str, Any]) -> tuple[int, dict[str, float]]:
    """(step, {tag: value}) of one row of the JSONL file `name` (metrics.jsonl, fit.jsonl or
    eval.jsonl): every number of the row but its step (of an eval row: its metrics), tagged
    with the file's prefix."""
    key, prefix = STEP_KEY[name], TAG_PREFIX[name]
    keep = METRIC_NAMES if name == EVAL else row  # evaluation: its metrics, not its timings
    values = {
        f"{prefix}/{k}": float(v)
        for k, v in row.items()
        if k != key and k in keep and isinstance(v, int | float)
    }
    return int(row[key]), values


class EventLog:
    """An open event file of a run: `add` appends one row's scalars and flushes."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        try:
            fd, tmp = temp_file(self.run_dir, ".events.")
            os.close(fd)
            self._writer = RecordWriter(tmp)
        except OSError as e:
            raise write_error(self.run_dir / EVENTS, e) from None
        self._tmp, self.path = Path(tmp), None
        self._write(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2"))

    def _write(self, event: event_pb2.Event) -> None:
        try:
            self._writer.write(event.SerializeToString())
        except OSError as e:
            raise write_error(self.path or self._tmp, e) from None

    def add(self, name: str, row: dict[str, Any], *, flush: bool = True) -> None:
        """Append one row of the JSONL file `name` (see `scalars`)."""
        step, values = scalars(name, row)
        now = time.time()
        for tag, value in values.items():
            self._write(
                event_pb2.Event(wall_time=now, step=step, summary=summary.scalar(tag, value))
            )
        if flush:
            self.flush()

    def add_text(self, tag: str, text: str, step: int = 0) -> None:
        self._write(
            event_pb2.Event(wall_time=time.time(), step=step, summary=summary.text(tag, text))
        )

    def publish(self) -> Path:
        """Rename the file to its event-file name (TensorBoard then reads it) and delete the
        run's other event files; the open file keeps taking rows."""
        self.flush()
        old = event_files(self.run_dir)
        path = self.run_dir / f"{EVENTS}.{time.time():.6f}.{os.getpid()}.pe_research"
        os.replace(self._tmp, path)
        for p in old:
            if p != path:
                p.unlink(missing_ok=True)
        self.path = path
        return path

    def flush(self) -> None:
        try:
            self._writer.flush()
        except OSError as e:
            raise write_error(self.path or self._tmp, e) from None

    def close(self) -> None:
        self._writer.close()
        if self.path is None:  # never published: leave no temporary file behind
            self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_events(run_dir: Path) -> EventLog:
    """Rebuild the run's event file from its config.json and the rows on disk (metrics.jsonl,
    fit.jsonl, eval.jsonl, whichever exist), replacing any older event file, and return it open
    for the rows still to come."""
    run_dir = Path(run_dir)
    log = EventLog(run_dir)
    try:
        if (run_dir / CONFIG).exists():
            config = json.loads((run_dir / CONFIG).read_text())
            log.add_text("config", "```\n" + json.dumps(config, indent=2) + "\n```")
        for name in (METRICS, FIT, SELECT, EVAL):
            if (run_dir / name).exists():
                for row in read_jsonl(run_dir / name):
                    log.add(name, row, flush=False)
        log.publish()
    except BaseException:
        log.close()
        raise
    return log


def write_events(run_dir: Path) -> Path:
    """Rebuild the event file of a run directory from its files (`pe-research tensorboard`)."""
    with open_events(run_dir) as log:
        return log.path


def write_all_events(paths: list[Path]) -> list[Path]:
    """Rebuild the event file of every finished run (DONE or FAILED) at or below each path;
    returns the files written. Unfinished runs are skipped: the process training one owns its
    file (and rebuilds it when it resumes). ValueError if there is no finished run."""
    found = {d for p in paths for d in finished_runs(p)}
    if not found:
        raise ValueError(
            f"No finished runs (directories with {CONFIG} and DONE or FAILED) under "
            f"{', '.join(map(str, paths))}."
        )
    return [write_events(d) for d in sorted(found)]
