"""The processes of `pe-research sweep --workers N` on one machine, and how a sweep stops.

The command starts N - 1 helper processes on the same folder (each claims the next unclaimed
group of runs, so on a small CPU one compiles while another trains), trains in its own process,
waits for the helpers, and writes the tables. A SIGTERM (kill, a scheduler's cancel) or Ctrl-C
stops the helpers too, instead of leaving them training, orphaned.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO


@dataclasses.dataclass
class Worker:
    """One helper process of the command, and its log."""

    index: int
    process: subprocess.Popen
    log: IO[str]

    @property
    def name(self) -> str:
        return f"worker {self.index} (pid {self.process.pid}, log {self.log.name})"


def command_line(
    experiment: str,
    out: Path,
    results: Path,
    *,
    scale: str | None,
    tasks: Sequence[str] | None,
    retry_failed: bool,
    checkpoint_every: int,
    lease_s: float,
    wandb: str | None = None,
) -> list[str]:
    """The sweep command a helper runs: the same sweep, training only (no tables)."""
    command = [sys.executable, "-m", "pe_research.cli", "sweep", experiment, "--out", str(out),
               "--results", str(results), "--no-progress", "--no-summarize",
               "--checkpoint-every", str(checkpoint_every), "--lease", f"{lease_s:g}"]  # fmt: skip
    command += ["--scale", scale] if scale else []
    command += ["--retry-failed"] if retry_failed else []
    command += ["--tasks", *tasks] if tasks else []
    command += ["--wandb", wandb] if wandb else []
    return command


def start(count: int, command: list[str], out: Path) -> list[Worker]:
    """`count` helper processes running `command`, each logging to OUT/worker-I.log."""
    out.mkdir(parents=True, exist_ok=True)
    helpers = []
    for i in range(1, count + 1):
        log = open(out / f"worker-{i}.log", "w")
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        helpers.append(Worker(i, process, log))
        time.sleep(2)  # let it claim the first group before the next process looks
    return helpers


def wait(helpers: list[Worker]) -> list[str]:
    """Wait for every helper; the logs of those that exited with an error."""
    running = [w.name for w in helpers if w.process.poll() is None]
    if running:
        print(f"Waiting for the workers of this command still training: {', '.join(running)}.")
    failed = []
    for w in helpers:
        if w.process.wait() != 0:
            print(f"Worker {w.index} exited with status {w.process.returncode}: see {w.log.name}.")
            failed.append(w.log.name)
    return failed


def stop(helpers: list[Worker]) -> None:
    """Terminate the helpers still running and close their logs."""
    for w in helpers:
        if w.process.poll() is None:
            w.process.terminate()
        w.log.close()


GRACE_S = 10.0
"""Seconds a process has to reach its exit after SIGTERM before it is ended without cleanup."""


@contextmanager
def exit_on_sigterm(active: bool = True) -> Iterator[Callable[[], None]]:
    """Inside the block, SIGTERM raises SystemExit(143) in this (main) thread, so that the
    caller's `finally` and `except SystemExit` run; the handler before is restored after. A
    no-op off the main thread or when not `active`. Yields `arrived`, for the caller to call
    once the exit reached it (before it cleans up).

    Python ignores an exception raised inside a garbage-collection callback (it prints
    "Exception ignored in: <function _xla_gc_callback ...>"), and JAX runs one on every
    collection, so a signal that lands there would be lost and the sweep train on: until the
    exit has arrived, the handler sends the signal again a second later. And a main thread
    blocked inside a call that never returns to Python (a wait on other processes) runs no
    handler at all: a watcher thread, woken by the signal itself (signal.set_wakeup_fd), ends
    the process (os._exit) if the exit has not arrived GRACE_S seconds later. Its runs resume
    from their checkpoints, and its claims are stale at once on this host."""
    arrived = threading.Event()

    def send_again(signum: int) -> None:
        if not arrived.is_set():
            os.kill(os.getpid(), signum)

    def handler(signum: int, frame: object) -> None:
        if not arrived.is_set():
            again = threading.Timer(1.0, send_again, (signum,))
            again.daemon = True
            again.start()
        raise SystemExit(128 + signum)

    def watch(wake: socket.socket) -> None:
        with wake:
            while signum := wake.recv(1):  # b"" once the block ends and the other end closes
                if signum[0] == signal.SIGTERM and not arrived.wait(GRACE_S):
                    print(f"No exit {GRACE_S:g} s after SIGTERM: ending now.", flush=True)
                    os._exit(128 + signal.SIGTERM)

    before, wakeup_before, pair = None, -1, None
    if active:
        try:
            before = signal.signal(signal.SIGTERM, handler)
        except ValueError:  # not the main thread: signals are the main thread's
            active = False
    if active:
        pair = socket.socketpair()
        pair[1].setblocking(False)
        wakeup_before = signal.set_wakeup_fd(pair[1].fileno(), warn_on_full_buffer=False)
        threading.Thread(target=watch, args=(pair[0],), daemon=True).start()
    try:
        yield arrived.set
    finally:
        arrived.set()
        if active:
            signal.signal(signal.SIGTERM, before)
            signal.set_wakeup_fd(wakeup_before)
            pair[1].close()
