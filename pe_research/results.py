"""Run directories and the rows in them.

    RUN_DIR/config.json    the RunConfig (task and encoding recorded by name) plus versions
    RUN_DIR/metrics.jsonl  one JSON object per logged training step
    RUN_DIR/eval.jsonl     one JSON object per evaluation length
    RUN_DIR/DONE           written last: a run without it is unfinished and is never read as done
    RUN_DIR/FAILED         instead of DONE, for a run that stopped for good (a diverged loss):
                           JSON with the step, the reason and the time (see `mark_failed`)
    RUN_DIR/LOCK           while a process trains the run: its host and PID (see `try_claim`)

Whole files are written to a temporary name and renamed, so a crash never leaves half a file;
the append-only metrics file is the exception, and readers skip a torn last line.

config.json records the code that produced the run (`versions`: package version, git commit of
the package's source and whether it had uncommitted changes, jax/flax versions, device kinds);
`code_version` condenses it, and summaries refuse to average runs of different code silently.
"""

from __future__ import annotations

import csv
import errno
import fcntl
import functools
import hashlib
import io
import json
import os
import platform
import shutil
import socket
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pe_research.config import RunConfig, series_label, task_label

CONFIG, METRICS, EVAL, DONE = "config.json", "metrics.jsonl", "eval.jsonl", "DONE"
FAILED, LOCK = "FAILED", "LOCK"
CHECKPOINTS = "checkpoints"  # orbax, see checkpoints.py
CSV_COLUMNS = (
    "task", "encoding", "seed", "train_length", "length",
    "token_accuracy", "exact_match", "loss", "bits_per_byte", "failed_step", "code", "data",
    "run",
)  # fmt: skip
"""Columns of results.csv. A failed run has one row per evaluation length with empty metrics and
its `failed_step`; `code` is the run's `code_version`; `bits_per_byte` is set for byte-level text
(byte_lm) only; `data` is what evaluation scored (a built set, a corpus split, or samples)."""
UNREADABLE_CLAIM_STALE_S = 60.0
"""A LOCK that holds no owner this long after its creation was left by a process that died
between creating and writing it."""


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the whole new one.

    OSError (a full disk, an unwritable folder) leaves `path` as it was and names what to do.
    """
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise write_error(path, e) from None
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise write_error(path, e) from None
        raise


class WriteError(OSError):
    """A file of a run could not be written; the message says which and what to do."""


def write_error(path: Path, e: OSError) -> WriteError:
    """`e`, reworded to say which file could not be written and what to do about it."""
    if isinstance(e, WriteError):
        return e
    if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        advice = "free some space (or raise the quota) or write to another folder with --out"
    elif e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        advice = "choose a folder you can write to with --out, or fix its permissions"
    else:
        advice = "check that the output folder (--out) can be created and written"
    unchanged = f"; {path} is unchanged" if path.is_file() else ""
    return WriteError(e.errno, f"could not write {path} ({e.strerror or e}): {advice}{unchanged}.")


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
                msg = (
                    f"{path}: skipped a torn last line (interrupted write); the {len(rows)} rows "
                    "before it are read."
                )
                warnings.warn(msg, stacklevel=2)
                continue
            raise ValueError(
                f"{path}:{i + 1} is not valid JSON and is not the last line, so it is not an "
                f"interrupted write but a damaged file: delete {path.parent} and rerun it."
            ) from None
    return rows


# -- provenance: which code produced a run -------------------------------------------------------


def _git(*args: str, cwd: Path) -> str | None:
    """stdout of a git command, or None where git or a repository is not available."""
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


@functools.cache
def source_revision() -> dict[str, Any]:
    """The git commit of this package's source, and whether the package has uncommitted changes
    (with a hash of them, so two dirty trees can be told apart); {} if the package is not a
    tracked part of a git checkout (an installed wheel). Computed once per process: a process
    runs the code it imported, whatever happens to the files later."""
    package = Path(__file__).resolve().parent
    if _git("ls-files", "--error-unmatch", "__init__.py", cwd=package) is None:
        return {}
    commit = _git("rev-parse", "HEAD", cwd=package)
    if commit is None:
        return {}
    diff = _git("diff", "HEAD", "--", ".", cwd=package) or ""
    untracked = (_git("ls-files", "--others", "--exclude-standard", cwd=package) or "").split()
    digest = hashlib.sha256(diff.encode())
    for name in sorted(untracked):
        try:
            digest.update(name.encode() + (package / name).read_bytes())
        except OSError:  # removed since git listed it
            continue
    revision: dict[str, Any] = {"git_commit": commit.strip(), "git_dirty": bool(diff or untracked)}
    if revision["git_dirty"]:
        revision["git_changes_sha256"] = digest.hexdigest()[:12]
    return revision


def versions() -> dict[str, Any]:
    """What config.json records about the code and the machine that produced a run."""
    import flax
    import jax
    import jaxlib
    import optax

    from pe_research import __version__

    devices = jax.devices()
    return {
        "pe_research": __version__,
        **source_revision(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "flax": flax.__version__,
        "optax": optax.__version__,
        "python": platform.python_version(),
        "platform": devices[0].platform,
        "device": devices[0].device_kind,
        "device_kinds": sorted({d.device_kind for d in devices}),
        "device_count": len(devices),
    }


def code_version(recorded: dict[str, Any]) -> str:
    """One line naming the code of a run from its recorded `versions` (package version, git
    commit and uncommitted changes, jax and flax versions; the device is not code): runs with
    different lines ran different code."""
    commit = recorded.get("git_commit")
    git = "git unknown" if commit is None else f"git {commit[:12]}"
    if recorded.get("git_dirty"):
        git += f" + uncommitted changes {recorded.get('git_changes_sha256', '?')}"
    return (
        f"pe_research {recorded.get('pe_research', '?')}, {git}, "
        f"jax {recorded.get('jax', '?')}, flax {recorded.get('flax', '?')}"
    )


def read_versions(run_dir: Path) -> dict[str, Any]:
    """The `versions` recorded in a run's config.json ({} for a file that has none)."""
    recorded = _read_config_json(Path(run_dir) / CONFIG).get("versions", {})
    return recorded if isinstance(recorded, dict) else {}


# -- run directories ------------------------------------------------------------------------------


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
            for name in (CONFIG, EVAL, DONE, FAILED) + (() if resume else (METRICS,)):
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
    write_atomic(Path(run_dir) / DONE, "")


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
    ours, theirs = _flat(cfg.to_dict()), _flat(recorded.to_dict())
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


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
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
                "token_accuracy": None,
                "exact_match": None,
                "loss": None,
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
