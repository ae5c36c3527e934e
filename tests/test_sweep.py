"""The sweep runner: grouping, shards, claims, resumption and the summary files."""

import csv
import errno
import gc
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import textwrap
import time

import pytest
from sweep_processes import TINY_EXPERIMENT, run_together, trained_runs

from pe_research import cli, encodings, results, runs, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.runs import claims
from pe_research.sweeps import experiments, pages, summary, sweep, workers


def tiny(task="copy", encoding="nope", seed=0, lengths=(3, 6)):
    return RunConfig(
        task=tasks.get(task),
        encoding=encodings.get(encoding),
        model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
        train=TrainConfig(steps=3, batch_size=4, train_length=3, log_every=1),
        eval=EvalConfig(lengths=lengths, batch_size=4),
        seed=seed,
    )


def fake_run(run_dir, cfg, value, *, done=True):
    """A run directory as training writes it, with made-up numbers (no training)."""
    runs.prepare(run_dir, cfg, overwrite=True)
    rows = [
        {
            "length": n,
            "token_accuracy": value + n / 100,
            "exact_match": value / 2 + n / 1000,
            "loss": 1 - value,
        }
        for n in cfg.eval_lengths
    ]
    runs.write_jsonl(run_dir / runs.EVAL, rows)
    if done:
        runs.mark_done(run_dir)


@pytest.fixture
def experiment(tmp_path):
    """An experiment file of two tiny copy runs (NoPE, RoPE): TINY_EXPERIMENT."""
    experiment = tmp_path / "tiny.py"
    experiment.write_text(textwrap.dedent(TINY_EXPERIMENT))
    return experiment


def fake_train_group(calls):
    """Stands in for train.train_group: records each call and the claims held during it."""

    def train_group(cfgs, run_dirs, *, progress=True, checkpoint_every=None, wandb=None):
        calls.append(
            {
                "seeds": [c.seed for c in cfgs],
                "encodings": {c.encoding.label() for c in cfgs},
                "claimed": all(runs.claim_holder(d) for d in run_dirs),
            }
        )
        for cfg, run_dir in zip(cfgs, run_dirs, strict=True):
            fake_run(run_dir, cfg, 0.5 + cfg.seed / 10)

    return train_group


def test_summary_equals_the_mean_of_the_rows_and_the_csv_round_trips(tmp_path):
    lengths = (2, 3, 6, 12, 24)
    cfgs = [tiny(encoding="nope", seed=s, lengths=lengths) for s in range(3)]
    cfgs += [tiny(encoding="rope", seed=s, lengths=lengths) for s in range(2)]
    dirs = [sweep.run_dir_for(tmp_path, c) for c in cfgs]
    for i, (cfg, d) in enumerate(zip(cfgs, dirs, strict=True)):
        fake_run(d, cfg, 0.1 * i + 0.03 * i * i)
    unfinished = tiny(encoding="rope", seed=7, lengths=lengths)
    dirs.append(sweep.run_dir_for(tmp_path, unfinished))
    fake_run(dirs[-1], unfinished, 100.0, done=False)

    tables = results.from_runs(dirs)
    results.write(tmp_path, tables)
    with open(tmp_path / results.CSV, newline="") as f:
        table = list(csv.DictReader(f))
    assert tuple(table[0]) == results.CSV_COLUMNS
    assert len(table) == 5 * len(lengths)  # one row per finished run x length
    assert all(float(r["token_accuracy"]) < 2 for r in table), "unfinished run summarized"
    for r in table:
        assert (tmp_path / r["run"] / runs.DONE).exists()
        evaluated = runs.read_jsonl(tmp_path / r["run"] / runs.EVAL)
        assert float(r["token_accuracy"]) == pytest.approx(
            next(e["token_accuracy"] for e in evaluated if e["length"] == int(r["length"])), 1e-5
        )
    back = results.read(tmp_path).results
    assert back.equals(tables.results)  # the parquet file keeps every value and type

    def values(encoding, length):
        return [
            float(r["token_accuracy"])
            for r in table
            if r["encoding"] == encoding and int(r["length"]) == length
        ]

    summary_md = pages.sweep_page(pages.read_sweep(tmp_path, tables))
    lines = {
        line.split("|")[2].strip(): line for line in summary_md.splitlines() if "| copy" in line
    }
    # Made-up exact match stays below 0.95 at the training length: every run is unfit, listed
    # apart, and the columns after the exact match at the training length hold the metric.
    assert "**Fit: 0 of 5 runs**" in summary_md
    lines = {k.removesuffix(" (unfit)"): v for k, v in lines.items() if k.endswith("(unfit)")}
    nope = [c.strip() for c in lines["nope"].split("|")[6:10]]
    assert nope == [
        f"{statistics.fmean(v):.3f} ± {statistics.stdev(v):.3f}"
        for v in (values("nope", n) for n in (3, 6, 12, 24))
    ]
    rope = [c.strip() for c in lines["rope"].split("|")[6:10]]
    assert rope == [
        f"{statistics.fmean(v):.3f} [{min(v):.3f}, {max(v):.3f}]"
        for v in (values("rope", n) for n in (3, 6, 12, 24))
    ]
    assert lines["rope"].split("|")[4].strip() == "2"  # runs: the unfinished one is not counted


def test_in_distribution_length_falls_back_below_the_training_length():
    rows = [
        {"task": "copy", "encoding": "nope", "train_length": 4, "length": n, "run": "r",
         "seed": 0, "token_accuracy": n / 10}
        for n in (2, 3, 8)
    ]  # fmt: skip
    line = next(x for x in summary.generalization_table(rows).splitlines() if "| copy" in x)
    assert [c.strip() for c in line.split("|")[6:10]] == ["0.300 (at 3)", "0.800", "-", "-"]
    assert runs.in_distribution_length({5, 6}, 4) is None


def test_runs_differing_only_in_seed_train_together_and_unfinished_runs_are_redone(
    tmp_path, monkeypatch, capsys
):
    cfgs = [tiny(encoding=e, seed=s) for e in ("nope", "rope") for s in (0, 1)]
    dirs = [sweep.run_dir_for(tmp_path, c) for c in cfgs]
    fake_run(dirs[0], cfgs[0], 0.0)  # finished: skipped
    fake_run(dirs[2], cfgs[2], 100.0, done=False)  # killed half-way: redone from scratch
    calls = []
    monkeypatch.setattr(train, "train_group", fake_train_group(calls))

    done = sweep.run_sweep(cfgs, tmp_path, progress=False)
    assert calls == [
        {"seeds": [1], "encodings": {"nope"}, "claimed": True},
        {"seeds": [0, 1], "encodings": {"rope"}, "claimed": True},
    ]
    assert done.complete and done.trained == dirs[1:]
    assert not list(tmp_path.rglob(runs.LOCK)), "claims must be released"
    assert runs.read_jsonl(dirs[2] / runs.EVAL)[0]["token_accuracy"] < 2
    assert "1 of 4 runs already finished" in capsys.readouterr().out

    sweep.run_sweep(cfgs, tmp_path, progress=False)
    assert len(calls) == 2 and "4 of 4 runs already finished" in capsys.readouterr().out


def test_a_sweep_resumes_from_its_results_table_and_its_pages_come_from_the_table_alone(
    experiment, tmp_path, monkeypatch, capsys
):
    calls = []
    monkeypatch.setattr(train, "train_group", fake_train_group(calls))
    out, table = tmp_path / "out", tmp_path / "table"
    done, written = sweep.run_experiment(str(experiment), out, results_dir=table, progress=False)
    assert len(calls) == 2 and done.complete
    assert {p.name for p in written} >= {results.RESULTS, results.CURVES, results.CSV, pages.PAGE}
    frame = results.load(table)
    assert set(frame["run"]) == set(done.ids) and set(frame["experiment"]) == {"tiny"}
    page = (table / pages.PAGE).read_text()

    # The run folders are gone (another machine, a later session): the table alone resumes the
    # sweep, which trains nothing, and gives the same page, byte for byte.
    shutil.rmtree(out)
    capsys.readouterr()
    done, _ = sweep.run_experiment(str(experiment), out, results_dir=table, progress=False)
    assert len(calls) == 2 and done.complete and done.trained == []
    assert "2 of these runs are recorded there" in capsys.readouterr().out
    (table / pages.PAGE).unlink()
    sweep.run_experiment(str(experiment), out, results_dir=table, tables_only=True)
    assert (table / pages.PAGE).read_text() == page
    assert results.load(table).equals(frame)

    # A table of other code is refused for resuming, with both versions named.
    edited = frame.copy()
    edited["code"] = "pe_research 0.1.0, git 0123456789ab, jax 0.0, flax 0.0"
    results.write(table, results.Tables(edited, results.read(table).curves))
    with pytest.raises(ValueError, match="holds runs of other code .*git 0123456789ab.* than this"):
        sweep.run_experiment(str(experiment), out, results_dir=table, progress=False)


def test_tables_only_trains_nothing_and_writes_the_page_once_every_run_is_finished(
    experiment, tmp_path, monkeypatch, capsys
):
    calls = []
    monkeypatch.setattr(train, "train_group", fake_train_group(calls))
    out = tmp_path / "out"
    done, written = sweep.run_experiment(str(experiment), out, progress=False, tables_only=True)
    assert calls == [] and written == [] and done.finished == []
    assert "No run of the 2 is finished yet" in capsys.readouterr().out

    done, _ = sweep.run_experiment(str(experiment), out, progress=False, summarize=False)
    trainings = len(calls)
    (done.dirs[1] / runs.DONE).unlink()  # one run unfinished: its table, and no page
    capsys.readouterr()
    cli.sweep(str(experiment), out=out, progress=False, tables_only=True)
    printed = capsys.readouterr().out
    assert len(calls) == trainings and not (out / pages.PAGE).exists()
    assert len(results.load(out)) == 2  # the finished run, at its two lengths
    assert "1 of 2 runs are not finished" in printed and "nope" in printed
    assert "already finished" not in printed  # nothing was offered for training

    runs.mark_done(done.dirs[1])
    _, written = sweep.run_experiment(str(experiment), out, progress=False, tables_only=True)
    assert len(calls) == trainings and out / pages.PAGE in written


def test_claims_are_released_when_training_fails(tmp_path, monkeypatch):
    def full_disk(cfgs, run_dirs, *, progress=True, checkpoint_every=None, wandb=None):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(train, "train_group", full_disk)
    with pytest.raises(OSError, match="No space left"):
        sweep.run_sweep([tiny()], tmp_path, progress=False)
    assert not list(tmp_path.rglob(runs.LOCK))


def test_a_diverged_group_does_not_stop_the_sweep(tmp_path, monkeypatch, capsys):
    """Seed 0 of the first group diverges (marked failed), seed 1 is cut short with it (left
    unfinished); the next group trains; a rerun redoes only the unfinished run; --retry-failed
    trains the failed one again."""
    cfgs = [tiny(encoding=e, seed=s) for e in ("nope", "rope") for s in (0, 1)]
    dirs = [sweep.run_dir_for(tmp_path, c) for c in cfgs]
    calls = []
    normal = fake_train_group(calls)

    def train_group(group, run_dirs, *, progress=True, checkpoint_every=None, wandb=None):
        if any(c.encoding.label() == "nope" for c in group) and len(calls) < 2:
            calls.append({"seeds": [c.seed for c in group]})
            runs.prepare(run_dirs[0], group[0])
            runs.mark_failed(run_dirs[0], step=2, reason="loss became nan")
            raise train.TrainingDiverged("loss became nan by step 2")
        normal(group, run_dirs, progress=progress)

    monkeypatch.setattr(train, "train_group", train_group)
    done = sweep.run_sweep(cfgs, tmp_path, progress=False)
    out = capsys.readouterr().out
    assert done.failed == [dirs[0]] and done.unfinished == [dirs[1]]
    assert done.trained == dirs[2:] and not done.complete
    assert "FAILED at step 2: loss became nan" in out and "left unfinished" in out
    assert not list(tmp_path.rglob(runs.LOCK))

    done = sweep.run_sweep(cfgs, tmp_path, progress=False)  # only the unfinished run
    assert done.trained == [dirs[1]] and done.complete and done.failed_runs == [dirs[0]]
    assert calls[-1] == {"seeds": [1], "encodings": {"nope"}, "claimed": True}
    assert "Of these, 1 run failed" in capsys.readouterr().out

    done = sweep.run_sweep(cfgs, tmp_path, progress=False, retry_failed=True)
    assert done.trained == [dirs[0]] and not done.failed_runs
    assert not runs.is_failed(dirs[0]) and "--retry-failed" in capsys.readouterr().out


def test_a_finished_run_of_another_config_is_refused(tmp_path):
    cfg = tiny()
    run_dir = sweep.run_dir_for(tmp_path, cfg)
    fake_run(run_dir, cfg, 0.5)
    edited = json.loads((run_dir / runs.CONFIG).read_text())
    edited["model"]["d_model"] = 32
    (run_dir / runs.CONFIG).write_text(json.dumps(edited))
    with pytest.raises(ValueError, match=r"model.d_model: 32 in the file, 16 expected.*Delete"):
        sweep.run_sweep([cfg], tmp_path, progress=False)


def test_a_run_claimed_by_a_live_process_is_left_to_it(tmp_path, monkeypatch, capsys):
    cfgs = [tiny(encoding=e) for e in ("nope", "rope")]
    dirs = [sweep.run_dir_for(tmp_path, c) for c in cfgs]
    assert runs.try_claim(dirs[0])  # held by this (live) process
    assert not runs.try_claim(dirs[0])
    calls = []
    monkeypatch.setattr(train, "train_group", fake_train_group(calls))

    done = sweep.run_sweep(cfgs, tmp_path, progress=False)
    assert done.trained == [dirs[1]] and not done.complete
    assert f"pid {os.getpid()}" in done.claimed_by_others[dirs[0]]
    assert "Left 1 run to the processes that claimed them" in capsys.readouterr().out

    runs.release(dirs[0])
    assert sweep.run_sweep(cfgs, tmp_path, progress=False).trained == [dirs[0]]


def test_a_run_held_by_a_worker_of_the_command_is_reported_as_its_own(
    tmp_path, monkeypatch, capsys
):
    """A `--workers` process's runs are not "claimed by others" whose LOCK a reader might delete
    if they thought the holder gone: the report names the worker."""
    cfgs = [tiny(encoding=e) for e in ("nope", "rope")]
    dirs = [sweep.run_dir_for(tmp_path, c) for c in cfgs]
    assert runs.try_claim(dirs[0])  # this process stands in for worker 1
    monkeypatch.setattr(train, "train_group", fake_train_group([]))
    worker = f"worker 1 (pid {os.getpid()}, log worker-1.log)"

    done = sweep.run_sweep(cfgs, tmp_path, progress=False, workers={os.getpid(): worker})
    out = capsys.readouterr().out
    assert done.held_by_workers == {dirs[0]: worker} and not done.claimed_by_others
    assert f"Left 1 run to this command's workers, still training:\n  {dirs[0]}: {worker}" in out
    assert "delete" not in out
    runs.release(dirs[0])


def dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_claims_are_taken_over(tmp_path, capsys):
    lock = tmp_path / runs.LOCK
    lock.write_text(json.dumps({"host": socket.gethostname(), "pid": dead_pid()}))
    assert runs.try_claim(tmp_path)
    assert "took over the claim of" in capsys.readouterr().out
    assert json.loads(lock.read_text())["pid"] == os.getpid()
    runs.release(tmp_path)
    assert not lock.exists()

    # A PID on another host cannot be checked: the claim stands while its heartbeat is fresh
    # (tests/test_claims.py: once it is older than the lease, it is stale).
    lock.write_text(json.dumps({"host": "another-host.invalid", "pid": dead_pid()}))
    assert not runs.try_claim(tmp_path)
    runs.release(tmp_path)  # not ours: left alone
    assert lock.exists()

    # Unreadable: a writer that is starting, or one that died before writing its name.
    lock.write_text("")
    assert not runs.try_claim(tmp_path)
    old = time.time() - 2 * claims.UNREADABLE_CLAIM_STALE_S
    os.utime(lock, (old, old))
    assert runs.try_claim(tmp_path)


def test_shards_partition_the_grid_and_keep_seeds_together():
    cfgs = [
        tiny(task=t, encoding=e, seed=s)
        for t in ("copy", "reverse", "offset")
        for e in ("nope", "rope")
        for s in (0, 1)
    ]
    groups = sweep.group_by_seed(cfgs)
    assert len(groups) == 6 and all(len(g) == 2 for g in groups)
    for count in (1, 2, 4, 7):
        shards = [sweep.shard_of(groups, i, count) for i in range(count)]
        runs = sorted(i for shard in shards for group in shard for i in group)
        assert runs == list(range(len(cfgs)))  # complete and disjoint
    assert sweep.parse_shard(" 1/3") == (1, 3)
    for bad in ("3/3", "1", "a/b", "-1/2", "1/0", "1/2/3"):
        with pytest.raises(ValueError, match="I/N"):
            sweep.parse_shard(bad)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["sweep", "default", "--shard", "2/2"], "is not I/N"),
        (["sweep", "default", "--num-processes", "2"], "need --coordinator"),
        (["sweep", "{empty}"], "returned no run configs"),
    ],
)
def test_bad_sweep_input_exits_with_a_message(tmp_path, capsys, argv, message):
    empty = tmp_path / "empty.py"
    empty.write_text("def runs():\n    return []\n")
    argv = [a.format(empty=empty) for a in argv]
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--out", str(tmp_path / "out"), "--no-progress"])
    assert exit_info.value.code != 0
    assert message in capsys.readouterr().err


def test_two_processes_sweeping_one_folder_train_each_run_once(experiment, tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "pe_research.cli", "sweep", str(experiment), "--out", str(out)]
    outputs = run_together([[*command, "--no-progress"]] * 2, cwd=tmp_path)

    expected = sorted(
        str(sweep.run_dir_for(out, c).relative_to(out))
        for c in experiments.experiment_runs(experiments.load_experiment(str(experiment)))
    )
    trained = [run for output in outputs for run in trained_runs(output)]
    assert sorted(trained) == expected, outputs  # every run once, by one of the two
    for run in expected:
        steps = [r["step"] for r in runs.read_jsonl(out / run / runs.METRICS)]
        assert steps == [1, 2, 3], f"{run}: rows of two trainings mixed"
        assert [r["length"] for r in runs.read_jsonl(out / run / runs.EVAL)] == [3, 6]
    assert not list(out.rglob(runs.LOCK))
    with open(out / "results.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 2 * len(expected)


def test_workers_share_the_sweep_and_the_first_process_writes_the_results(experiment, tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "pe_research.cli", "sweep", str(experiment), "--out", str(out)]
    (output,) = run_together([[*command, "--no-progress", "--workers", "2"]], cwd=tmp_path)
    expected = sorted(
        str(sweep.run_dir_for(out, c).relative_to(out))
        for c in experiments.experiment_runs(experiments.load_experiment(str(experiment)))
    )
    worker = (out / "worker-1.log").read_text()
    trained = trained_runs(output) + trained_runs(worker)
    assert sorted(trained) == expected, (output, worker)  # each run once, by one of the two
    assert "Wrote " in output and "Wrote " not in worker  # the results come from this process
    with open(out / "results.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 2 * len(expected)


_POPEN = subprocess.Popen


class _Worker:
    """Stands in for a `--workers` process (subprocess.Popen) that fails: when waited for, it has
    exited with status -9, and if it `dies_holding` a run, that run is unfinished under the stale
    claim of the dead process `pid` (a worker killed with SIGKILL mid-training)."""

    def __init__(self, dies_holding, pid):
        self.dies_holding, self.pid, self.returncode = dies_holding, pid, None

    def __call__(self, command, *args, **kwargs):
        if "pe_research.cli" not in command:  # other programs (git, for provenance) run
            return _POPEN(command, *args, **kwargs)
        if self.dies_holding is not None:  # claimed at once: the sweep leaves the run to it
            assert runs.try_claim(self.dies_holding)
        return self

    def wait(self):
        if self.dies_holding is not None:
            owner = {"host": socket.gethostname(), "pid": self.pid}
            (self.dies_holding / runs.LOCK).write_text(json.dumps(owner))
        self.returncode = -9
        return self.returncode

    def poll(self):
        return self.returncode


def test_a_sigterm_to_the_sweep_stops_its_workers(experiment, tmp_path, monkeypatch):
    """`kill` of a `sweep --workers 2` (the parent) exits with 143 and terminates the workers it
    started, instead of leaving them training, orphaned."""

    class Worker(_Worker):
        terminated = False

        def poll(self):
            return None  # still training

        def terminate(self):
            Worker.terminated = True

    monkeypatch.setattr(workers.subprocess, "Popen", Worker(None, dead_pid()))
    monkeypatch.setattr(workers.time, "sleep", lambda s: None)

    def killed(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this returns

    monkeypatch.setattr(train, "train_group", killed)
    before = signal.getsignal(signal.SIGTERM)
    argv = ["sweep", str(experiment), "--out", str(tmp_path / "out"), "--no-progress"]
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--workers", "2"])
    assert exit_info.value.code == 128 + signal.SIGTERM
    assert Worker.terminated
    assert signal.getsignal(signal.SIGTERM) == before  # restored for whoever called the sweep


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the lost raise
def test_a_sigterm_that_lands_in_a_gc_callback_still_stops_the_sweep(
    experiment, tmp_path, monkeypatch
):
    """Python ignores the SystemExit a handler raises inside a garbage-collection callback (JAX
    runs one on every collection); the sweep must still stop, not train on (it did, once)."""

    class Worker(_Worker):
        def terminate(self):
            pass

    monkeypatch.setattr(workers.subprocess, "Popen", Worker(None, dead_pid()))
    wait = time.sleep

    def killed(*args, **kwargs):
        def callback(phase, info):
            gc.callbacks.remove(callback)
            os.kill(os.getpid(), signal.SIGTERM)  # its handler raises here, and the raise is lost

        gc.callbacks.append(callback)
        gc.collect()
        for _ in range(100):  # 5 s: the signal comes again after 1
            wait(0.05)
        raise AssertionError("the SIGTERM was lost: the sweep trained on")

    monkeypatch.setattr(workers.time, "sleep", lambda s: None)
    monkeypatch.setattr(train, "train_group", killed)
    argv = ["sweep", str(experiment), "--out", str(tmp_path / "out"), "--no-progress"]
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--workers", "2"])
    assert exit_info.value.code == 128 + signal.SIGTERM


@pytest.mark.parametrize("holder", ["dead-worker", "live-process"])
def test_a_failed_worker_that_leaves_runs_unfinished_fails_the_sweep(
    experiment, tmp_path, monkeypatch, capsys, holder
):
    """`sweep --workers 2` with a worker killed while it held a run: the command exits 1 (a
    scheduler must not read it as success) and the rerun finishes the sweep with status 0. When
    the unfinished run belongs to another live process, a failed worker does not fail the
    command."""
    out = tmp_path / "out"
    cfgs = experiments.experiment_runs(experiments.load_experiment(str(experiment)))
    first = sweep.run_dir_for(out, cfgs[0])
    if holder == "live-process":
        assert runs.try_claim(first)  # this test's process: alive
    pid = dead_pid()
    monkeypatch.setattr(
        workers.subprocess, "Popen", _Worker(first if holder == "dead-worker" else None, pid)
    )
    monkeypatch.setattr(workers.time, "sleep", lambda s: None)
    monkeypatch.setattr(train, "train_group", fake_train_group([]))
    argv = ["sweep", str(experiment), "--out", str(out), "--no-progress", "--workers", "2"]

    def sweep_status():
        try:
            cli.main(argv)
        except SystemExit as e:
            return e.code
        return 0

    status = sweep_status()
    captured = capsys.readouterr()
    assert "Worker 1 exited with status -9" in captured.out
    # While a worker still runs, the command says the runs it holds are that worker's, so the
    # "if that process is gone, delete LOCK" above is not read as being about a leftover.
    waiting = f"Waiting for the workers of this command still training: worker 1 (pid {pid},"
    assert captured.out.index(waiting) < captured.out.index("Worker 1 exited"), captured.out
    assert all(runs.is_done(sweep.run_dir_for(out, c)) for c in cfgs[1:])
    assert not runs.is_finished(first)
    if holder == "dead-worker":
        assert status == 1
        assert "1 run(s) left unfinished because a worker of this command failed" in captured.err
        argv[-1] = "1"  # the rerun, alone, takes the stale claim over and finishes the run
        assert sweep_status() == 0 and runs.is_done(first)
    else:
        assert status == 0 and "left unfinished because" not in captured.err
        runs.release(first)


def test_a_sweep_stopped_by_ctrl_c_or_kill_writes_the_table_of_the_runs_it_finished(
    experiment, tmp_path, monkeypatch, capsys
):
    calls = []
    finish = fake_train_group(calls)

    def train_then_stop(cfgs, run_dirs, **kw):  # the second group is interrupted mid-training
        if calls:
            calls.append("stopped")
            raise KeyboardInterrupt
        finish(cfgs, run_dirs, **kw)

    monkeypatch.setattr(train, "train_group", train_then_stop)
    out, table = tmp_path / "out", tmp_path / "table"
    with pytest.raises(KeyboardInterrupt):
        sweep.run_experiment(str(experiment), out, results_dir=table, progress=False)
    assert calls[-1] == "stopped"
    finished = runs.finished_runs(out)
    assert len(finished) == 1
    assert set(results.load(table)["run"]) == {"/".join(finished[0].parts[-3:])}
    assert "Wrote the table of 1 finished runs" in capsys.readouterr().out
    assert not list(out.rglob(runs.LOCK)), "the stopped group's claims must be released"


def test_a_sweep_of_some_tasks_keeps_the_tables_rows_of_the_others(tmp_path, monkeypatch):
    experiment = tmp_path / "two_tasks.py"
    source = textwrap.dedent(TINY_EXPERIMENT).replace('tasks.get("copy")', "tasks.get(task)")
    grid = 'for enc in ("nope", "rope") for task in ("copy", "reverse")'
    experiment.write_text(source.replace('for enc in ("nope", "rope")', grid))
    monkeypatch.setattr(train, "train_group", fake_train_group([]))
    table = tmp_path / "table"
    for task in ("copy", "reverse"):
        sweep.run_experiment(str(experiment), tmp_path / "out", results_dir=table,
                             progress=False, tasks=[task])  # fmt: skip
    assert set(results.load(table)["task"]) == {"copy", "reverse"}  # the first sweep's kept
    assert (table / pages.PAGE).exists()  # once the whole grid is in the table
