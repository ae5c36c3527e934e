"""Claims: one process trains a run at a time.

RUN_DIR/LOCK holds the host and PID of the process training the run (see `try_claim`); a claim
left by a dead process on this host is taken over.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from pe_research.runs.directory import LOCK

UNREADABLE_CLAIM_STALE_S = 60.0
"""A LOCK that holds no owner this long after its creation was left by a process that died
between creating and writing it."""


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


def holder_pid(run_dir: Path) -> int | None:
    """The PID of the process on this host that holds the claim on `run_dir`; None if nobody
    does, its LOCK is not yet written, or the holder is on another host."""
    try:
        owner = _owner((Path(run_dir) / LOCK).read_text())
    except FileNotFoundError:
        return None
    if owner is None or owner["host"] != socket.gethostname():
        return None
    return int(owner["pid"])


def is_claimed(run_dir: Path) -> bool:
    """Whether a live process (or one on another host, which cannot be checked) holds the claim
    on `run_dir`; a claim left by a dead process on this host is not a claim."""
    path = Path(run_dir) / LOCK
    try:
        return not _is_stale(path, path.read_text())
    except FileNotFoundError:
        return False


def release(run_dir: Path) -> None:
    """Remove our claim on `run_dir` (a claim held by another process is left alone)."""
    path = Path(run_dir) / LOCK
    try:
        owner = _owner(path.read_text())
    except FileNotFoundError:
        return
    if owner is not None and {k: owner[k] for k in ("host", "pid")} == _me():
        path.unlink(missing_ok=True)
