"""The tools in scripts/ (and the one beside the experiments): each answers --help, and those
without a test of their own elsewhere run on tiny inputs here."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = [
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "scripts").iterdir() if p.is_file()),
    "experiments/mcgill_paper_numbers.py",
]


def run(path: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """A tool run as a user runs it: bash for .sh, this Python for .py, from the repository."""
    assert path.endswith((".py", ".sh")), f"{path}: scripts/ holds .py and .sh tools only"
    program = "bash" if path.endswith(".sh") else sys.executable
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run([program, path, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def load(name: str):
    """scripts/<name>.py as a module (its main not run)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", TOOLS)
def test_every_tool_answers_help(path):
    done = run(path, "--help")
    assert done.returncode == 0, done.stdout + done.stderr
    name = Path(path).name
    assert name in done.stdout, f"{path} --help should show how to run it:\n{done.stdout}"


def test_device_sweeps_without_a_spec_says_what_to_give():
    done = run("scripts/device_sweeps.sh", "60")
    assert done.returncode == 2
    assert "give SECONDS and at least one SPEC" in done.stderr and "SPEC =" in done.stderr


def test_peer_side_by_side_names_the_folder_the_peer_checkout_belongs_in(tmp_path):
    done = run("scripts/peer_side_by_side.py", "--peer-src", str(tmp_path))
    assert done.returncode == 1
    assert "randomized_positional_encodings/ not found: --peer-src is the folder" in done.stderr


def test_bench_table_has_a_row_per_measurement():
    row = {
        "workload": "default",
        "encodings": {"rope": {"train": {"compile_s": 1.5, "step_s": 0.02, "tokens_per_s": 9e3,
                                         "gflop_per_s": 4.0, "fraction_of_peak": 0.1},
                               "eval": {"eval_s": 3.0, "eval_compiles": 2}}},
        "length_buckets": [{"length_buckets": 4, "step_s": 0.01, "sequences_per_s": 640.0,
                            "real_tokens_per_s": 8e3, "padding_fraction": 0.25}],
        "packed": [{"models": 4, "tokens_per_s": 3e4, "vs_one_by_one": 0.8,
                    "fraction_of_peak": 0.3}],
        "matmul_peak_gflop_per_s": 40.0,
    }  # fmt: skip
    text = load("bench").table([row])
    assert "| default | rope | 1.5 | 20.0 | 9000 | 4.0 | 10% | 3.0 | 2 |" in text
    assert "| default | 4 | 10.0 | 640 | 8000 | 25% |" in text
    assert "| default | 4 | 30000 | 0.80 | 30% |" in text
    assert text.endswith("(GFLOP/s): default 40")


def test_search_recipes_every_recipe_is_a_valid_run_and_the_table_counts_fits():
    script = load("search_recipes")
    for recipe in script.RECIPES:
        cfg = script.config(recipe, "copy", "rope")
        cfg.check()
        assert cfg.train.stop_when_fit and cfg.train.train_length == 16
    pairs = [("copy", "rope"), ("copy", "nope")]
    rows = [
        {"recipe": "base", "task": "copy", "encoding": "rope", "fit": True, "fit_step": 300,
         "exact_match_16": 0.97, "steps": 300, "seconds": 10.0},
        {"recipe": "base", "task": "copy", "encoding": "nope", "fit": False, "fit_step": None,
         "exact_match_16": 0.5, "steps": 3000, "seconds": 50.0},
    ]  # fmt: skip
    assert "| base | **0.97**@300 | 0.50 | 1/2 | 60 |" in script.table(rows, pairs)
    assert "| base | **0.97**@300 | - | 1/2 | 10 (partial) |" in script.table(rows[:1], pairs)


def test_encoding_cost_refuses_positions_it_has_no_reference_for(monkeypatch, capsys):
    script = load("encoding_cost")
    for spec, message in [("mrope", "mrope takes 3-D positions"),
                          ("rope:bse=3", "has no hyper-parameter(s) ['bse']")]:  # fmt: skip
        monkeypatch.setattr(sys, "argv", ["encoding_cost.py", "--encodings", spec])
        with pytest.raises(SystemExit) as exit_info:
            script.main()
        assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_encoding_cost_times_each_encoding_beside_its_reference(tmp_path, monkeypatch, capsys):
    script = load("encoding_cost")
    argv = ["--encodings", "nope", "--windows", "1", "--steps", "1", "--out", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", ["encoding_cost.py", *argv])
    script.main()
    rows = json.loads((tmp_path / "encoding_cost.json").read_text())["rows"]
    assert [(r["encoding"], r["task"], r["reference"]) for r in rows] == [
        ("rope", "copy", "rope"),
        ("nope", "copy", "rope"),
    ]
    assert rows[0]["vs_reference"] == 1.0 and rows[1]["ms_per_step"] > 0
    assert "| nope | copy |" in capsys.readouterr().out


def test_sweep_cost_predicts_every_training_of_an_experiment(tmp_path, monkeypatch, capsys):
    experiment = tmp_path / "tiny.py"
    experiment.write_text(textwrap.dedent('''
        from pe_research import encodings, tasks
        from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig

        def runs():
            return [
                RunConfig(task=tasks.get("copy", alphabet=8), encoding=encodings.get(name),
                          model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
                          train=TrainConfig(steps=50, batch_size=8, train_length=4),
                          eval=EvalConfig(lengths=(4, 8), batch_size=8), seed=seed)
                for name in ("nope", "rope") for seed in (0, 1)
            ]
    '''))  # fmt: skip
    from pe_research import bench

    monkeypatch.setattr(bench, "measure_matmul_peak", lambda *args, **kwargs: 1e10)
    argv = [str(experiment), "--steps", "1", "--repeats", "1", "--probes", "1"]
    monkeypatch.setattr(sys, "argv", ["sweep_cost.py", *argv])
    load("sweep_cost").main()
    out = capsys.readouterr().out
    assert "4 runs, 2 trainings; fp32 matmul peak here 10.0 GFLOP/s" in out
    assert "(2 seeds packed)" in out and "(the sum of 2 trainings of at most 50 steps)" in out


def test_compare_tables_names_the_packs_whose_numbers_moved(tmp_path):
    frame = pd.DataFrame([
        {"run": f"{e}-{s}", "length": n, "task": "copy", "encoding": e, "seed": s,
         "token_accuracy": 0.5 + 0.01 * n, "exact_match": None if n > 4 else 1.0,
         "fit": e == "rope", "fit_step": 100 if e == "rope" else None, "commit": "a" * 40}
        for e in ("nope", "rope") for s in (0, 1) for n in (4, 8)
    ])  # fmt: skip
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    frame.to_parquet(tmp_path / "old/results.parquet")
    moved = frame.assign(commit="b" * 40)
    moved.loc[(moved["run"] == "rope-1") & (moved["length"] == 8), "token_accuracy"] += 0.25
    moved.to_parquet(tmp_path / "new/results.parquet")
    done = run("scripts/compare_tables.py", str(tmp_path / "old"), str(tmp_path / "new"),
               "--json", str(tmp_path / "out.json"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "| copy | nope | 2 | 4 of 4 | 0 | 0 -> 0 |" in done.stdout
    assert "| copy | rope | 2 | 3 of 4 | 0.25 | 2 -> 2 |" in done.stdout
    assert "1 of 2 task x encoding packs equal bit for bit; moved: copy/rope." in done.stdout
    records = json.loads((tmp_path / "out.json").read_text())
    assert [r["commits_new"] for r in records] == [["b" * 12]] * 2

    frame.assign(run=frame["run"] + "-other").to_parquet(tmp_path / "new/results.parquet")
    done = run("scripts/compare_tables.py", str(tmp_path / "old"), str(tmp_path / "new"))
    assert done.returncode == 1 and "have no run in common" in done.stderr
