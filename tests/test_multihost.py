"""Two JAX processes (one job on 127.0.0.1) split an experiment's grid between them."""

import csv
import signal
import socket
import subprocess
import sys
import textwrap
import time

from sweep_processes import TINY_EXPERIMENT, run_together, trained_runs

from pe_research import cli, runs
from pe_research.sweeps import experiments, sweep, workers
from pe_research.training import checkpoints


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_each_process_trains_its_shard_and_any_process_summarizes(tmp_path, capsys):
    experiment = tmp_path / "tiny.py"
    experiment.write_text(textwrap.dedent(TINY_EXPERIMENT))
    out = tmp_path / "out"
    job = ["--coordinator", f"127.0.0.1:{free_port()}", "--num-processes", "2"]
    command = [sys.executable, "-m", "pe_research.cli", "sweep", str(experiment), "--out", str(out)]
    outputs = run_together(
        [[*command, *job, "--process-id", str(i), "--no-progress"] for i in range(2)],
        cwd=tmp_path,
    )

    expected = {
        str(sweep.run_dir_for(out, c).relative_to(out))
        for c in experiments.experiment_runs(experiments.load_experiment(str(experiment)))
    }
    shards = [trained_runs(output) for output in outputs]
    assert all(shards), f"each process trains its own shard:\n{outputs}"
    assert sorted(shards[0] + shards[1]) == sorted(expected), outputs  # disjoint and complete
    for i, output in enumerate(outputs):
        assert f"Shard {i}/2: 0 of 1 runs already finished" in output

    cli.main(["sweep", str(experiment), "--out", str(out), "--no-progress"])
    assert "2 of 2 runs already finished" in capsys.readouterr().out
    with open(out / "results.csv", newline="") as f:
        assert {r["run"] for r in csv.DictReader(f)} == expected
    assert not list(out.rglob(runs.LOCK))


UNEQUAL_EXPERIMENT = """
from pe_research import encodings, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig

def runs():
    # Three groups: shard 0 of 2 trains the first and the last, shard 1 the middle one; each
    # process checkpoints at its own steps and has a different number of runs.
    return [
        RunConfig(
            task=tasks.get("copy"),
            encoding=encodings.get(encoding),
            model=ModelConfig(num_layers=layers, d_model=16, num_heads=2, mlp_dim=32),
            train=TrainConfig(steps=steps, batch_size=4, train_length=3, log_every=1),
            eval=EvalConfig(lengths=(3, 6), batch_size=4),
        )
        for encoding, layers, steps in (("nope", 1, 3), ("rope", 2, 60), ("alibi", 1, 25))
    ]
"""


def unequal_job(tmp_path):
    """The commands of a 2-process JAX job sweeping UNEQUAL_EXPERIMENT, checkpoints every 10."""
    experiment = tmp_path / "unequal.py"
    experiment.write_text(textwrap.dedent(UNEQUAL_EXPERIMENT))
    job = ["--coordinator", f"127.0.0.1:{free_port()}", "--num-processes", "2"]
    command = [sys.executable, "-m", "pe_research.cli", "sweep", str(experiment), "--out",
               str(tmp_path / "out"), "--checkpoint-every", "10", "--no-progress",
               *job]  # fmt: skip
    configs = experiments.experiment_runs(experiments.load_experiment(str(experiment)))
    return [[*command, "--process-id", str(i)] for i in range(2)], configs


def test_a_job_whose_processes_train_different_runs_at_different_steps_finishes(tmp_path):
    """Each process checkpoints its own runs: none waits on a barrier the other never reaches."""
    commands, configs = unequal_job(tmp_path)
    outputs = run_together(commands, cwd=tmp_path, timeout=300)
    trained = sorted(run for output in outputs for run in trained_runs(output))
    assert trained == sorted(runs.run_id(c) for c in configs), outputs
    assert all(runs.is_done(sweep.run_dir_for(tmp_path / "out", c)) for c in configs)


def test_sigterm_stops_one_process_of_a_job_within_seconds_and_its_runs_resume(tmp_path):
    commands, configs = unequal_job(tmp_path)
    out = tmp_path / "out"
    procs = [
        subprocess.Popen(c, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
        for c in commands
    ]  # fmt: skip
    try:
        rope = sweep.run_dir_for(out, configs[1])  # shard 1's run, 60 steps
        deadline = time.monotonic() + 240
        while not checkpoints.steps(rope) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert checkpoints.steps(rope), "shard 1 never checkpointed"
        procs[1].send_signal(signal.SIGTERM)
        start = time.monotonic()
        procs[1].wait(timeout=60)
        assert time.monotonic() - start < 30 + workers.GRACE_S
        assert procs[1].returncode in (128 + signal.SIGTERM, -signal.SIGTERM)
        procs[0].communicate(timeout=240)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    assert not runs.is_done(rope)
    # Rerun alone, the stopped run resumes from its checkpoint (its claim is stale: a dead PID).
    cli.main(["sweep", str(tmp_path / "unequal.py"), "--out", str(out), "--no-progress",
              "--checkpoint-every", "10"])  # fmt: skip
    assert all(runs.is_done(sweep.run_dir_for(out, c)) for c in configs)
