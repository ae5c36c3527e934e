"""Claims as leases (runs.claims): a claim not refreshed for its lease is stale whatever host
wrote it; a live one is left alone; taking one over names its holder."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from pe_research import cli, runs
from pe_research.runs import claims


def claim_of(run_dir, host, pid, lease_s=60.0, silent_s=0.0):
    """A LOCK as another process writes it, its last heartbeat `silent_s` seconds ago."""
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = run_dir / runs.LOCK
    record = {"host": host, "pid": pid, "since": "2026-01-01T00:00:00+00:00", "lease_s": lease_s}
    lock.write_text(json.dumps(record) + "\n")
    then = time.time() - silent_s
    os.utime(lock, (then, then))
    return lock


def test_a_claim_from_another_host_expires_with_its_lease_and_is_taken_over_naming_it(
    tmp_path, capsys
):
    lock = claim_of(tmp_path, "node-7.cluster.invalid", 4242, lease_s=60, silent_s=61)
    assert not runs.is_claimed(tmp_path)
    assert runs.try_claim(tmp_path, lease_s=90)
    printed = capsys.readouterr().out
    assert "took over the claim of node-7.cluster.invalid pid 4242 since 2026-01-01" in printed
    assert "silent for 1.0 min" in printed
    mine = json.loads(lock.read_text())
    assert (mine["host"], mine["pid"], mine["lease_s"]) == (socket.gethostname(), os.getpid(), 90)
    runs.release(tmp_path)
    assert not lock.exists()


def test_a_claim_with_a_fresh_heartbeat_is_left_alone_on_any_host(tmp_path):
    claim_of(tmp_path, "node-7.cluster.invalid", 4242, lease_s=60, silent_s=59)
    assert runs.is_claimed(tmp_path) and not runs.try_claim(tmp_path)
    assert "node-7.cluster.invalid pid 4242" in runs.claim_holder(tmp_path)
    runs.release(tmp_path)  # not ours
    assert (tmp_path / runs.LOCK).exists()


def test_heartbeats_refresh_only_this_processs_claims(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    assert runs.try_claim(ours)
    other = claim_of(theirs, "node-7.cluster.invalid", 4242, silent_s=30)
    old = time.time() - 30
    os.utime(ours / runs.LOCK, (old, old))
    runs.beat([ours, theirs], every=0.0)
    assert time.time() - (ours / runs.LOCK).stat().st_mtime < 5
    assert time.time() - other.stat().st_mtime > 25
    # Not more often than `every`: a call right after changes nothing.
    os.utime(ours / runs.LOCK, (old, old))
    runs.beat([ours], every=3600.0)
    assert time.time() - (ours / runs.LOCK).stat().st_mtime > 25
    runs.release(ours)


def test_a_claim_of_our_pid_by_another_process_is_stale(tmp_path):
    """A container that replaces another often has its host name and PID (1): that process's
    claim is not ours, and it is dead."""
    claim_of(tmp_path, socket.gethostname(), os.getpid())  # no token of ours
    assert not runs.is_claimed(tmp_path)
    assert runs.try_claim(tmp_path)
    runs.release(tmp_path)


SLEEPER = """
import sys, time
from pe_research.runs import claims
assert claims.try_claim(sys.argv[1], lease_s=float(sys.argv[2]))
print("claimed", flush=True)
time.sleep(600)
"""


def test_a_process_killed_on_another_host_is_taken_over_after_its_lease(tmp_path, capsys):
    """A process claims a run and is SIGKILLed; its LOCK is made to say another host (as on a
    shared filesystem), so its dead PID cannot be checked: the lease alone frees the run."""
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", SLEEPER, str(run), "40"],
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "claimed"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    lock = run / runs.LOCK
    record = json.loads(lock.read_text())
    lock.write_text(json.dumps({**record, "host": "node-7.cluster.invalid"}) + "\n")
    assert runs.is_claimed(run) and not runs.try_claim(run)  # within its lease
    old = time.time() - 41
    os.utime(lock, (old, old))
    assert runs.try_claim(run)
    assert f"node-7.cluster.invalid pid {proc.pid}" in capsys.readouterr().out
    runs.release(run)


def test_only_one_of_two_contenders_takes_a_stale_claim_over(tmp_path, monkeypatch):
    lock = claim_of(tmp_path, "node-7.cluster.invalid", 4242, lease_s=60, silent_s=120)
    stale = lock.read_text()
    # Another contender is replacing it right now: it holds LOCK.takeover.
    (tmp_path / (runs.LOCK + claims.TAKEOVER)).write_text("{}")
    assert not runs.try_claim(tmp_path)
    assert lock.read_text() == stale


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--lease", "20"], "--lease 20 is not longer than the heartbeat"),
        (["--shard", "auto"], "--shard auto found no scheduler's index: SLURM_ARRAY_TASK_ID"),
        (["--shard-count", "3"], "--shard-count goes with --shard auto"),
    ],
)
def test_bad_lease_and_shard_options_exit_2_writing_nothing(tmp_path, capsys, monkeypatch, argv,
                                                            message):  # fmt: skip
    for name in ("SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["sweep", "default", "--out", str(tmp_path / "out"), "--no-progress", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_filesystem_without_atomic_create_is_refused_naming_the_fix(tmp_path, capsys,
                                                                      monkeypatch):  # fmt: skip
    real_open = os.open

    def no_exclusive_create(path, flags, *args):
        if flags & os.O_EXCL:
            raise OSError(22, "Invalid argument")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", no_exclusive_create)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["sweep", "default", "--out", str(tmp_path / "out"), "--no-progress"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "cannot create a file atomically and exclusively" in err and "NFSv3" in err
    assert list(tmp_path.iterdir()) == []
