"""Two JAX processes (one job on 127.0.0.1) split an experiment's grid between them."""

import csv
import socket
import sys
import textwrap

from sweep_processes import TINY_EXPERIMENT, run_together, trained_runs

from pe_research import cli, runs
from pe_research.sweeps import experiments, sweep


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
