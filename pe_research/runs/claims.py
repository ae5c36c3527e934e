"""Claims: one process trains a run at a time, on one machine or many sharing a folder.

RUN_DIR/LOCK holds the claim: the holder's host, PID, when it claimed the run and its lease. A
claim is a lease: the holder refreshes it (the file's modification time, `beat`) every
HEARTBEAT_S seconds while it trains and evaluates, and a claim not refreshed for its lease is
stale, whatever host wrote it (a preempted job, a pod moved to another node, a VM restarted). A
claim whose holder is a dead process on this host is stale at once. Taking a stale claim over
says who held it and since when.

What the folder's filesystem must provide, for several hosts: atomic exclusive create
(O_CREAT | O_EXCL; NFSv3 and later, Lustre, GPFS, local disks), atomic rename, modification times
that every host sees within the lease (NFS caches attributes for up to a minute), and clocks
that agree within about a minute. No flock: it does not work across hosts on many of them.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pe_research.runs.directory import LOCK

HEARTBEAT_S = 30.0
"""How often a process refreshes the claims it holds (`beat`), at most."""
LEASE_S = 600.0
"""How long a claim lives without a heartbeat, unless its holder chose another (`--lease`)."""
UNREADABLE_CLAIM_STALE_S = 60.0
"""A LOCK that holds no owner this long after its creation was left by a process that died
between creating and writing it."""
TAKEOVER = ".takeover"
"""RUN_DIR/LOCK.takeover: held (exclusively created) by the one process replacing a stale claim;
one left by a process that died mid-takeover is stale after UNREADABLE_CLAIM_STALE_S."""


def check_lease(lease_s: float) -> None:
    """ValueError unless a lease outlives several heartbeats."""
    if not lease_s > HEARTBEAT_S:
        raise ValueError(
            f"--lease {lease_s:g} is not longer than the heartbeat ({HEARTBEAT_S:g} s): a claim "
            f"would expire while its holder is alive; give --lease several times {HEARTBEAT_S:g} "
            f"(the default is {LEASE_S:g})."
        )


def check_folder(folder: Path) -> None:
    """ValueError naming the fix if the filesystem of `folder` (or of its nearest existing parent)
    cannot create a file atomically and exclusively, as claims need; leaves nothing behind."""
    folder = Path(folder).absolute()
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    probe = existing / f".pe_research-claim-probe-{socket.gethostname()}-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except OSError as e:
        raise ValueError(
            f"{existing} cannot create a file atomically and exclusively (O_CREAT | O_EXCL: "
            f"{e.strerror}), which claims on runs need: put --out on a local disk or a shared "
            "filesystem that provides it (NFSv3 or later, Lustre, GPFS; not an object-store "
            "mount such as gcsfuse)."
        ) from None
    os.close(fd)
    probe.unlink(missing_ok=True)


_TOKEN = uuid.uuid4().hex
"""This process's own mark in its claims: a process started in a fresh container often has the
host name and PID of the one it replaces (a rescheduled pod, PID 1), and must not read that
one's claim as its own."""


def _me() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "token": _TOKEN}


def _mine(owner: dict[str, Any] | None) -> bool:
    return owner is not None and all(owner.get(k) == v for k, v in _me().items())


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _create(path: Path, record: dict[str, Any]) -> bool:
    """Create `path` holding `record`; False if it exists. O_EXCL makes this atomic, also
    between hosts sharing the filesystem."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
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


def _silence(path: Path) -> float:
    """Seconds since the claim at `path` was last refreshed (its modification time)."""
    return time.time() - path.stat().st_mtime


def _is_stale(path: Path, text: str) -> bool:
    """Whether the claim in `text` (read from `path`) is stale: its holder is a dead process on
    this host, or it was not refreshed for its lease."""
    owner = _owner(text)
    if owner is None:  # being written right now, or its writer died before writing
        return _silence(path) > UNREADABLE_CLAIM_STALE_S
    if owner["host"] == socket.gethostname():
        pid = int(owner["pid"])
        if not _alive(pid) or (pid == os.getpid() and not _mine(owner)):  # dead, or our PID reused
            return True
    return _silence(path) > float(owner.get("lease_s", LEASE_S))


def try_claim(run_dir: Path, lease_s: float = LEASE_S) -> bool:
    """Claim `run_dir` for this process by creating its LOCK; False if a live holder has it.

    A stale claim (`_is_stale`) is taken over, with a message naming who held it. Refresh the
    claim with `beat` while working on the run, and release it with `release` once the run is
    finished or has failed."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK
    record = {**_me(), "since": _now(), "lease_s": lease_s}
    for _ in range(3):  # the holder may release between our create and our read: try again
        if _create(path, record):
            _held[run_dir.absolute()] = time.monotonic()
            return True
        try:
            text = path.read_text()
            if not _is_stale(path, text):
                return False
            silence = _silence(path)
        except FileNotFoundError:
            continue
        if _take_over(run_dir, text, silence, record):
            _held[run_dir.absolute()] = time.monotonic()
            return True
        return False
    return False


def _take_over(run_dir: Path, stale: str, silence: float, record: dict[str, Any]) -> bool:
    """Replace the stale claim `stale` by `record`, unless another process does first.

    One process at a time replaces it: the one that creates LOCK.takeover (exclusively, so also
    across hosts). It checks the claim is still the stale one, removes it and creates its own."""
    path = run_dir / LOCK
    guard = run_dir / (LOCK + TAKEOVER)
    if not _create(guard, _me()):
        try:  # a takeover is under way, or its process died mid-way
            if _silence(guard) > UNREADABLE_CLAIM_STALE_S:
                guard.unlink(missing_ok=True)
        except FileNotFoundError:
            pass
        return False
    try:
        try:
            if path.read_text() != stale:
                return False  # refreshed, released or replaced since we looked
            path.unlink()
        except FileNotFoundError:
            pass
        if not _create(path, record):
            return False
    finally:
        guard.unlink(missing_ok=True)
    owner = _owner(stale)
    if owner is None:
        holder = "a process that died before writing it"
    else:
        holder = f"{owner['host']} pid {owner['pid']} since {owner.get('since', '?')}"
    minutes = silence / 60
    print(f"{path}: took over the claim of {holder}, silent for {minutes:.1f} min.", flush=True)
    return True


_held: dict[Path, float] = {}
"""This process's claims -> when it last refreshed each (time.monotonic)."""


def beat(run_dirs: Iterable[Path], *, every: float = HEARTBEAT_S) -> None:
    """Refresh this process's claims on `run_dirs` (their LOCK's modification time) if the last
    refresh is `every` seconds old; a claim that is no longer ours is left alone. Cheap enough to
    call at every training step."""
    now = time.monotonic()
    for run_dir in run_dirs:
        key = Path(run_dir).absolute()
        last = _held.get(key)
        if last is None or now - last < every:
            continue
        path = key / LOCK
        try:
            if _mine(_owner(path.read_text())):
                os.utime(path)
        except FileNotFoundError:
            pass
        _held[key] = now


def claim_holder(run_dir: Path) -> str | None:
    """Who holds the claim on `run_dir`, in words (None if nobody)."""
    path = Path(run_dir) / LOCK
    try:
        text = path.read_text()
        silence = _silence(path)
    except FileNotFoundError:
        return None
    owner = _owner(text)
    if owner is None:
        return "a process that is starting (unreadable LOCK)"
    return (
        f"{owner['host']} pid {owner['pid']} since {owner.get('since', '?')}, last heartbeat "
        f"{silence:.0f} s ago"
    )


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
    """Whether a live holder has the claim on `run_dir` (not stale: `_is_stale`)."""
    path = Path(run_dir) / LOCK
    try:
        return not _is_stale(path, path.read_text())
    except FileNotFoundError:
        return False


def release(run_dir: Path) -> None:
    """Remove our claim on `run_dir` (a claim held by another process is left alone)."""
    path = Path(run_dir) / LOCK
    _held.pop(Path(run_dir).absolute(), None)
    try:
        owner = _owner(path.read_text())
    except FileNotFoundError:
        return
    if _mine(owner):
        path.unlink(missing_ok=True)
