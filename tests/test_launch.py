"""`pe-research launch`: a sweep submitted through submitit as an array of shard jobs and a table
job after them (SLURM, checked against a stand-in sbatch), or run by its local executor."""

import os
import stat
import sys
import textwrap

import pandas as pd
import pytest
from sweep_processes import TINY_EXPERIMENT

from pe_research import cli, metrics, results
from pe_research.sweeps import sweep

submitit = pytest.importorskip("submitit")


@pytest.fixture
def experiment(tmp_path):
    """An experiment file of two tiny copy runs (NoPE, RoPE): TINY_EXPERIMENT."""
    path = tmp_path / "tiny.py"
    path.write_text(textwrap.dedent(TINY_EXPERIMENT))
    return path


FAKE_SBATCH = """#!/bin/bash
# Stands in for SLURM's sbatch: keeps the script and answers as sbatch does, one job id a call.
count="$(dirname "$0")/count"
id=$(( $(cat "$count" 2>/dev/null || echo 4241) + 1 ))
echo "$id" > "$count"
cp "$1" "$(dirname "$0")/job-$id.sh"
echo "Submitted batch job $id"
"""


def fake_slurm(folder):
    """A bin folder with a stand-in sbatch, and an srun (submitit looks for one)."""
    folder.mkdir()
    for name, text in {"sbatch": FAKE_SBATCH, "srun": "#!/bin/bash\nexit 1\n"}.items():
        (folder / name).write_text(text)
        (folder / name).chmod(stat.S_IRWXU)
    return folder


def sbatch_lines(script):
    return {line for line in script.read_text().splitlines() if line.startswith("#SBATCH")}


def test_launch_slurm_submits_an_array_of_shards_and_a_table_job_after_it(
    experiment, tmp_path, monkeypatch, capsys
):
    bin_ = fake_slurm(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    out, res = tmp_path / "out", tmp_path / "res"
    cli.main(["launch", "slurm", str(experiment), "--tasks", "3", "--out", str(out),
              "--results", str(res), "--partition", "gpu", "--gpus-per-task", "1",
              "--cpus-per-task", "4", "--time", "90"])  # fmt: skip

    printed = capsys.readouterr().out
    assert "job array 4242 (3 jobs) and the table job 4243" in printed
    assert f"logs in {out / 'slurm'}/" in printed
    array, table = sbatch_lines(bin_ / "job-4242.sh"), sbatch_lines(bin_ / "job-4243.sh")
    assert {"#SBATCH --array=0-2%3", "#SBATCH --partition=gpu", "#SBATCH --gpus-per-node=1",
            "#SBATCH --cpus-per-task=4", "#SBATCH --time=90"} <= array  # fmt: skip
    assert not any("dependency" in line for line in array)
    assert {"#SBATCH --dependency=afterany:4242", "#SBATCH --partition=gpu"} <= table
    assert not any("gpus" in line for line in table)  # the table job trains nothing

    def call(job_id):
        submitted = submitit.core.utils.DelayedSubmission.load(out / "slurm" / job_id)
        assert submitted.function is sweep.run_experiment
        assert submitted.args == (str(experiment), out)
        return submitted.kwargs

    common = {"results_dir": res, "scale": None, "tasks": None, "progress": False,
              "checkpoint_every": 100}  # fmt: skip
    for i in range(3):
        assert call(f"4242_{i}_submitted.pkl") == {**common, "shard": (i, 3), "summarize": False}
    assert call("4243_submitted.pkl") == {**common, "tables_only": True}


def test_launch_without_submitit_exits_2_naming_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "submitit", None)  # `import submitit` raises ImportError
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["launch", "slurm", "default", "--tasks", "2"])
    assert exit_info.value.code == 2
    assert 'pip install "pe-research[slurm]"' in capsys.readouterr().err


@pytest.mark.slow
def test_launch_local_in_two_jobs_gives_the_table_of_a_one_process_sweep(experiment, tmp_path):
    out, res = tmp_path / "out", tmp_path / "res"
    cli.main(["launch", "local", str(experiment), "--tasks", "2", "--out", str(out),
              "--results", str(res)])  # fmt: skip
    sweep.run_experiment(str(experiment), tmp_path / "alone", progress=False)

    columns = ["run", "length", *metrics.METRICS]
    launched, alone = (
        results.load(folder)[columns].sort_values(["run", "length"]).reset_index(drop=True)
        for folder in (res, tmp_path / "alone")
    )
    assert len(launched) == 4  # 2 runs x 2 lengths
    pd.testing.assert_frame_equal(launched, alone, check_exact=True)
    assert (res / "summary.md").exists()  # every run is in the table: the page too
    assert len(list((out / "local").glob("*_submitted.pkl"))) == 3
