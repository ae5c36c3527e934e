"""Run directories and the rows in them.

    RUN_DIR/config.json    the RunConfig (task and encoding recorded by name) plus versions
    RUN_DIR/metrics.jsonl  one JSON object per logged training step
    RUN_DIR/eval.jsonl     one JSON object per evaluation length
    RUN_DIR/DONE           written last: a run without it is unfinished and is never read as done
    RUN_DIR/LOCK           while a process trains the run: its host and PID (see `try_claim`)

Whole files are written to a temporary name and renamed, so a crash never leaves half a file;
the append-only metrics file is the exception, and readers skip a torn last line.
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import platform
import socket
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pe_research.config import RunConfig, series_label, task_label

CONFIG, METRICS, EVAL, DONE = "config.json", "metrics.jsonl", "eval.jsonl", "DONE"
LOCK = "LOCK"
CSV_COLUMNS = (
    "task", "encoding", "seed", "train_length", "length",
    "token_accuracy", "exact_match", "loss", "run",
)  # fmt: skip
UNREADABLE_CLAIM_STALE_S = 60.0
"""A LOCK that holds no owner this long after its creation was left by a process that died
between creating and writing it."""


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    write_atomic(path, "".join(json.dumps(row) + "\n" for row in rows))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a torn last line (a crash mid-append) is skipped with a warning."""
    rows = []
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                msg = f"{path}: skipped a torn last line (interrupted write)."
                warnings.warn(msg, stacklevel=2)
                continue
            raise ValueError(f"{path}:{i + 1} is not valid JSON; the file is corrupt.") from None
    return rows


def versions() -> dict[str, str]:
    import flax
    import jax
    import optax

    from pe_research import __version__

    return {
        "pe_research": __version__,
        "jax": jax.__version__,
        "flax": flax.__version__,
        "optax": optax.__version__,
        "python": platform.python_version(),
        "device": jax.devices()[0].device_kind,
    }


def is_done(run_dir: Path) -> bool:
    return (Path(run_dir) / DONE).exists()


def prepare(run_dir: Path, cfg: RunConfig, *, overwrite: bool = False) -> Path:
    """Create (or reset) a run directory and write its config.json.

    A directory holding a finished run is refused unless `overwrite`; an unfinished one (no DONE)
    is cleared, so two runs' rows never share a file.
    """
    run_dir = Path(run_dir)
    if is_done(run_dir) and not overwrite:
        raise FileExistsError(
            f"{run_dir} already holds a finished run; pass --overwrite to replace it or choose "
            "another output directory."
        )
    if run_dir.exists():
        for name in (CONFIG, METRICS, EVAL, DONE):
            (run_dir / name).unlink(missing_ok=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(
        run_dir / CONFIG,
        json.dumps({**cfg.to_dict(), "versions": versions()}, indent=2) + "\n",
    )
    return run_dir


def mark_done(run_dir: Path) -> None:
    write_atomic(Path(run_dir) / DONE, "")


def load_config(run_dir: Path) -> RunConfig:
    path = Path(run_dir) / CONFIG
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: is {run_dir} a run directory?")
    try:
        d = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON ({e}); rerun the training.") from None
    return RunConfig.from_dict(d)


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


def eval_rows(run_dirs: Iterable[Path]) -> Iterator[dict[str, Any]]:
    """Tidy rows: one per run x evaluation length, labelled with the run's task and encoding."""
    for run_dir in run_dirs:
        cfg = load_config(run_dir)
        for row in read_jsonl(Path(run_dir) / EVAL):
            yield {
                "run": str(run_dir),
                "task": task_label(cfg.task),
                "encoding": series_label(cfg),
                "seed": cfg.seed,
                "train_length": cfg.train.train_length,
                "chance": {"token_accuracy": 1.0 / cfg.task.alphabet},
                **row,
            }


def write_csv(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """A tidy CSV (CSV_COLUMNS, one row per run x evaluation length) that pandas reads as is."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(Path(path), buf.getvalue())


# -- claims: one process trains a run at a time ------------------------------------------------


def _me() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}


def _create_claim(path: Path) -> bool:
    """Create `path` holding our host and PID; False if it exists. O_EXCL makes this atomic,
    also between hosts sharing the file system."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    try:
        since = time.strftime("%Y-%m-%dT%H:%M:%S")
        os.write(fd, (json.dumps({**_me(), "since": since}) + "\n").encode())
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    os.close(fd)
    return True


def _owner(text: str) -> dict[str, Any] | None:
    try:
        owner = json.loads(text)
        return owner if isinstance(owner, dict) and {"host", "pid"} <= owner.keys() else None
    except json.JSONDecodeError:
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _is_stale(path: Path, text: str) -> bool:
    """Whether the claim in `text` was left by a dead process. A PID can only be checked on its
    own host: a claim from another host is never stale."""
    owner = _owner(text)
    if owner is None:  # being written right now, or its writer died before writing
        return time.time() - path.stat().st_mtime > UNREADABLE_CLAIM_STALE_S
    return owner["host"] == socket.gethostname() and not _alive(int(owner["pid"]))


def try_claim(run_dir: Path) -> bool:
    """Claim `run_dir` for this process by creating its LOCK; False if a live process holds it.

    A claim left by a dead process on this host is taken over, with a message. Release the claim
    with `release` once the run is finished or has failed.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK
    for _ in range(3):  # the holder may release between our create and our read: try again
        if _create_claim(path):
            return True
        try:
            text = path.read_text()
            if not _is_stale(path, text):
                return False
        except FileNotFoundError:
            continue
        return _take_over(run_dir, text)
    return False


def _take_over(run_dir: Path, stale: str) -> bool:
    """Replace the stale claim `stale` by ours, unless someone replaced it first.

    Only processes on the holder's host can judge it dead, so contenders share a host: flock on
    the directory (released by the kernel even if we die) makes their read-delete-create atomic.
    """
    path = run_dir / LOCK
    fd = os.open(run_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if path.read_text() != stale:
                return False  # another process took it over first
            path.unlink()
        except FileNotFoundError:
            pass
        if not _create_claim(path):
            return False
        owner = _owner(stale)
        holder = f"{owner['host']} pid {owner['pid']}" if owner else "a process that died"
        print(f"{path}: took over a stale claim by {holder}, which is no longer running.")
        return True
    finally:
        os.close(fd)  # releases the flock


def claim_holder(run_dir: Path) -> str | None:
    """Who holds the claim on `run_dir`, in words (None if nobody)."""
    try:
        text = (Path(run_dir) / LOCK).read_text()
    except FileNotFoundError:
        return None
    owner = _owner(text)
    if owner is None:
        return "a process that is starting (unreadable LOCK)"
    return f"{owner['host']} pid {owner['pid']} since {owner.get('since', '?')}"


def release(run_dir: Path) -> None:
    """Remove our claim on `run_dir` (a claim held by another process is left alone)."""
    path = Path(run_dir) / LOCK
    try:
        owner = _owner(path.read_text())
    except FileNotFoundError:
        return
    if owner is not None and {k: owner[k] for k in ("host", "pid")} == _me():
        path.unlink(missing_ok=True)
