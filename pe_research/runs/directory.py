"""Run directories: their files, their lifecycle and their config.

RUN_DIR/config.json    the RunConfig (task and encoding recorded by name) plus versions
RUN_DIR/metrics.jsonl  one JSON object per logged training step
RUN_DIR/fit.jsonl      one JSON object per fit check (train.stop_when_fit): step, exact match
RUN_DIR/select.jsonl   one JSON object per validation check (train.select_best): step, score
RUN_DIR/eval.jsonl     one JSON object per evaluation length
RUN_DIR/checkpoints/   orbax checkpoints (pe_research.training.checkpoints)
RUN_DIR/DONE           written last: a run without it is unfinished and is never read as done;
                       it holds the UTC time the run finished
RUN_DIR/FAILED         instead of DONE, for a run that stopped for good (a diverged loss):
                       JSON with the step, the reason and the time (see `mark_failed`)
RUN_DIR/LOCK           while a process trains the run: its host and PID (runs.claims)
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pe_research.config import RunConfig, encoding_label, task_label
from pe_research.runs.files import write_atomic, write_error
from pe_research.runs.provenance import versions

CONFIG, METRICS, EVAL, DONE = "config.json", "metrics.jsonl", "eval.jsonl", "DONE"
FAILED, LOCK, FIT, SELECT = "FAILED", "LOCK", "fit.jsonl", "select.jsonl"
CHECKPOINTS = "checkpoints"  # orbax, see pe_research.training.checkpoints


def is_done(run_dir: Path) -> bool:
    return (Path(run_dir) / DONE).exists()


def mark_failed(run_dir: Path, *, step: int, reason: str) -> None:
    """Record that the run stopped for good at `step` (a diverged loss), instead of DONE.

    A failed run counts as finished: sweeps do not redo it (it is deterministic and would fail
    again) unless asked to retry failed runs, and summaries show it as failed.
    """
    record = {"step": int(step), "reason": reason, "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    write_atomic(Path(run_dir) / FAILED, json.dumps(record) + "\n")


def failure(run_dir: Path) -> dict[str, Any] | None:
    """The FAILED record of a run ({"step", "reason", "time"}), or None if it did not fail."""
    path = Path(run_dir) / FAILED
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        record = json.loads(text)
    except json.JSONDecodeError:
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("step"), int):
        # Written atomically, so this is a hand-made file: still a failure, step unknown.
        return {"step": -1, "reason": f"unreadable {FAILED} file: {text[:200]!r}", "time": "?"}
    return record


def is_failed(run_dir: Path) -> bool:
    return (Path(run_dir) / FAILED).exists()


def is_finished(run_dir: Path) -> bool:
    """Done, or failed for good (deterministic: rerunning it would fail the same way)."""
    return is_done(run_dir) or is_failed(run_dir)


def clear_failure(run_dir: Path) -> None:
    """Forget a failure before training the run again."""
    (Path(run_dir) / FAILED).unlink(missing_ok=True)


def prepare(
    run_dir: Path, cfg: RunConfig, *, overwrite: bool = False, resume: bool = False
) -> Path:
    """Create (or reset) a run directory and write its config.json.

    A directory holding a finished run is refused unless `overwrite`; an unfinished one (no DONE)
    is cleared, so two runs' rows never share a file, unless `resume`: then its metrics.jsonl
    and checkpoints/ stay for training to continue from.
    """
    run_dir = Path(run_dir)
    if is_done(run_dir) and not overwrite:
        raise FileExistsError(
            f"{run_dir} already holds a finished run; pass --overwrite to replace it or choose "
            "another output directory."
        )
    text = json.dumps({**cfg.to_dict(), "versions": versions()}, indent=2) + "\n"
    created = [d for d in (run_dir, *run_dir.parents) if not d.exists()]
    try:
        if not created:
            for name in (CONFIG, EVAL, DONE, FAILED) + (() if resume else (METRICS, FIT, SELECT)):
                (run_dir / name).unlink(missing_ok=True)
            if not resume:
                shutil.rmtree(run_dir / CHECKPOINTS, ignore_errors=True)
        run_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(run_dir / CONFIG, text)
    except OSError as e:
        for d in created:  # innermost first: leave no empty directory behind
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()
        raise write_error(run_dir / CONFIG, e) from None
    return run_dir


def mark_done(run_dir: Path) -> None:
    now = datetime.datetime.now(datetime.UTC)
    write_atomic(Path(run_dir) / DONE, now.isoformat(timespec="seconds") + "\n")


def finished_at(run_dir: Path) -> datetime.datetime | None:
    """When a finished run finished (UTC, the time its DONE holds); None for a run without DONE
    or one whose DONE holds no time."""
    try:
        text = (Path(run_dir) / DONE).read_text().strip()
    except FileNotFoundError:
        return None
    try:
        return datetime.datetime.fromisoformat(text).astimezone(datetime.UTC)
    except ValueError:
        return None


def _safe(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", label).strip("_")


def run_id(cfg: RunConfig) -> str:
    """TASK/ENCODING/seedN-HASH: the name of a run in a sweep's folder and its results table.
    HASH covers `cfg.identity()` (the config less the fields at their defaults), so adding an
    option with a default leaves every id as it was."""
    identity = json.dumps(cfg.identity(), sort_keys=True)
    digest = hashlib.sha256(identity.encode()).hexdigest()[:8]
    return f"{_safe(task_label(cfg.task))}/{_safe(encoding_label(cfg))}/seed{cfg.seed}-{digest}"


def _read_config_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: is {path.parent} a run directory?")
    try:
        d = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(
            f"{path} is not valid JSON ({e}): restore it, or delete {path.parent} and rerun "
            "the training to rewrite it."
        ) from None
    if not isinstance(d, dict):
        raise ValueError(f"{path} holds a JSON {type(d).__name__}, not the object of a RunConfig.")
    return d


def load_config(run_dir: Path) -> RunConfig:
    """The RunConfig of a run directory; ValueError names the file and what does not fit."""
    path = Path(run_dir) / CONFIG
    try:
        return RunConfig.from_dict(_read_config_json(path))
    except ValueError as e:
        if str(path) in str(e):
            raise
        raise ValueError(f"{path}: {e}") from None


def check_same_config(run_dir: Path, cfg: RunConfig) -> None:
    """ValueError if `run_dir` holds a run of another config (an edited or copied config.json)."""
    recorded = load_config(run_dir)
    if recorded == cfg:
        return
    ours, theirs = flat_config(cfg.to_dict()), flat_config(recorded.to_dict())
    diffs = [
        f"{k}: {theirs.get(k, '(missing)')!r} in the file, {ours.get(k, '(missing)')!r} expected"
        for k in sorted(set(ours) | set(theirs))
        if ours.get(k) != theirs.get(k)
    ]
    raise ValueError(
        f"{Path(run_dir) / CONFIG} is a run of a different config ({'; '.join(diffs[:5])}): the "
        f"file was edited or the directory copied. Delete {run_dir} to retrain it, or restore "
        "its config.json."
    )


def flat_config(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested config dict as one level with dotted keys ("model.d_model")."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flat_config(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def find_runs(paths: Iterable[Path | str]) -> list[Path]:
    """Finished run directories at or below each path, sorted; ValueError if there are none."""
    found: set[Path] = set()
    for p in map(Path, paths):
        if not p.exists():
            raise FileNotFoundError(f"{p} does not exist.")
        found.update(d.parent for d in p.rglob(DONE))
        if is_done(p):
            found.add(p)
    if not found:
        raise ValueError(
            f"No finished runs (directories with a {DONE} file) under {', '.join(map(str, paths))}."
        )
    return sorted(found)


def finished_runs(path: Path | str) -> list[Path]:
    """Run directories at or below `path` that finished (DONE) or failed for good (FAILED),
    sorted; [] if none. FileNotFoundError if `path` does not exist."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist.")
    return sorted({c.parent for c in path.rglob(CONFIG) if is_finished(c.parent)})


def read_versions(run_dir: Path) -> dict[str, Any]:
    """The `versions` recorded in a run's config.json ({} for a file that has none)."""
    recorded = _read_config_json(Path(run_dir) / CONFIG).get("versions", {})
    return recorded if isinstance(recorded, dict) else {}
