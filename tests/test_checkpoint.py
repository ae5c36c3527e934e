"""Preemption: kill -9 at a random moment, rerun the same command, get the same numbers.

Faults injected here: SIGKILL of `pe-research train` and of `pe-research sweep` while they
train (after a random number of checkpoints), a truncated newest checkpoint, and a checkpoint
from another seed. Each rerun must resume (not restart), skip finished runs, and end with
metrics, evaluation rows and parameters bit-identical to an uninterrupted run.
"""

import dataclasses
import json
import random
import signal
import subprocess
import sys
import textwrap
import time

import jax
import numpy as np
import pytest

from pe_research import cli, results, runs, train
from pe_research.sweeps import experiments, sweep
from pe_research.training import checkpoints

TIMING = {"tokens_per_s", "elapsed_s", "compile_s", "seconds"}

FLAGS = [
    "--no-progress",
    "--checkpoint-every", "20",
    "--model.num-layers", "1",
    "--model.d-model", "16",
    "--model.num-heads", "2",
    "--model.mlp-dim", "32",
    "--train.steps", "120",
    "--train.batch-size", "4",
    "--train.train-length", "4",
    "--train.log-every", "10",
    "--eval.lengths", "4", "8",
    "--eval.batch-size", "4",
]  # fmt: skip


def rows(path):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in runs.read_jsonl(path)]


def final_params(run_dir):
    cfg = runs.load_config(run_dir)
    graphdef, state = train.init_state(cfg, keys := train.keys_from_seed(cfg.seed))
    params, _ = checkpoints.load_params(
        run_dir, state, {"data": keys.data, "positions": keys.positions}
    )
    return jax.tree.leaves(params)


def kill_when(proc, ready, timeout=120):
    """SIGKILL `proc` as soon as `ready()` holds; fail if it exits first."""
    t0 = time.monotonic()
    while not ready():
        assert proc.poll() is None, f"exited before the kill:\n{proc.communicate()[0]}"
        assert time.monotonic() - t0 < timeout, "timed out waiting to kill"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_train_killed_and_rerun_resumes_bit_identically(tmp_path):
    reference, run = tmp_path / "reference", tmp_path / "run"
    cli.main(["train", "--out", str(reference), *FLAGS, "copy", "rope"])

    command = [sys.executable, "-m", "pe_research.cli", "train", "--out", str(run), *FLAGS]
    proc = subprocess.Popen(
        [*command, "copy", "rope"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    kill_at = random.Random().choice([40, 60, 80])
    kill_when(proc, lambda: any(s >= kill_at for s in checkpoints.steps(run)))
    assert not runs.is_done(run)
    kept = checkpoints.steps(run)
    # The oldest is deleted once a newer one is complete, so a kill may leave KEEP + 1.
    assert kept and max(kept) < 120 and len(kept) <= checkpoints.KEEP + 1

    # The newest checkpoint is damaged too: it is reported and the previous one is used.
    newest = run / "checkpoints" / str(max(kept))
    for f in (p for p in newest.rglob("*") if p.is_file() and p.stat().st_size > 0):
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    with pytest.warns(UserWarning, match=f"checkpoint {max(kept)} .* cannot be read"):
        cli.main(["train", "--out", str(run), *FLAGS, "copy", "rope"])

    assert runs.is_done(run)
    assert checkpoints.steps(run) == [80, 100, 120] == checkpoints.steps(reference)
    assert rows(run / runs.METRICS) == rows(reference / runs.METRICS)
    assert rows(run / runs.EVAL) == rows(reference / runs.EVAL)
    for a, b in zip(final_params(run), final_params(reference), strict=True):
        np.testing.assert_array_equal(a, b)

    # A checkpoint holding another seed's streams (a copied run directory) is refused.
    cfg = runs.load_config(run)
    _, state = train.init_state(cfg, keys := train.keys_from_seed(cfg.seed + 1))
    with pytest.raises(ValueError, match="another seed's data key"):
        checkpoints.restore(run, 120, state, {"data": keys.data, "positions": keys.positions})


EXPERIMENT = """
from pe_research import encodings, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig

def runs():
    return [
        RunConfig(
            task=tasks.get("copy"),
            encoding=encodings.get(enc),
            model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
            train=TrainConfig(steps=100, batch_size=4, train_length=4, log_every=10),
            eval=EvalConfig(lengths=(4, 8), batch_size=4),
        )
        for enc in ("nope", "rope")
    ]
"""


def test_sweep_killed_and_rerun_skips_finished_runs_and_resumes_the_interrupted(tmp_path):
    experiment = tmp_path / "three.py"
    experiment.write_text(textwrap.dedent(EXPERIMENT))
    dirs = [
        sweep.run_dir_for(tmp_path / "run", c)
        for c in experiments.experiment_runs(experiments.load_experiment(str(experiment)))
    ]
    command = [sys.executable, "-m", "pe_research.cli", "sweep", str(experiment)]
    flags = ["--no-progress", "--checkpoint-every", "10"]
    proc = subprocess.Popen(
        [*command, "--out", str(tmp_path / "run"), *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # Kill once the first run is done and the second has checkpointed part of its training.
    kill_when(proc, lambda: runs.is_done(dirs[0]) and len(checkpoints.steps(dirs[1])) > 1)
    assert not runs.is_done(dirs[1])
    first_done = (dirs[0] / runs.DONE).stat().st_mtime_ns

    cli.main(["sweep", str(experiment), "--out", str(tmp_path / "run"), *flags])
    cli.main(["sweep", str(experiment), "--out", str(tmp_path / "reference"), *flags])
    assert (dirs[0] / runs.DONE).stat().st_mtime_ns == first_done  # not trained again
    ours = (tmp_path / "run" / "summary.md").read_text().replace(str(tmp_path / "run"), "OUT")
    theirs = (tmp_path / "reference" / "summary.md").read_text()
    assert ours == theirs.replace(str(tmp_path / "reference"), "OUT")
    # Every result of the table (not when or how fast: timings, compile counts, finish times).
    kept = [*results.LABELS, *results.METRICS, *results.VERDICT]
    ours, theirs = (results.load(tmp_path / d)[kept] for d in ("run", "reference"))
    assert ours.equals(theirs), ours.compare(theirs)
    for d in dirs:
        ref = tmp_path / "reference" / d.relative_to(tmp_path / "run")
        assert rows(d / runs.METRICS) == rows(ref / runs.METRICS)
        assert rows(d / runs.EVAL) == rows(ref / runs.EVAL)
    assert json.loads((dirs[1] / runs.CONFIG).read_text())["seed"] == 0


def test_when_no_checkpoint_reads_back_training_starts_over(tmp_path):
    run = tmp_path / "run"
    short = ["40" if flag == "120" else flag for flag in FLAGS]  # 40 steps, checkpoints 20, 40
    cli.main(["train", "--out", str(run), *short, "copy", "nope"])
    reference = rows(run / runs.METRICS)
    (run / runs.DONE).unlink()  # as if killed after the last checkpoint
    for f in (p for p in (run / "checkpoints").rglob("*") if p.is_file()):
        f.write_bytes(b"")
    with pytest.warns(UserWarning, match="cannot be read"):
        cli.main(["train", "--out", str(run), *short, "copy", "nope"])
    assert runs.is_done(run) and rows(run / runs.METRICS) == reference
    assert checkpoints.steps(run) == [20, 40]


def test_packed_seeds_resume_from_the_newest_step_all_of_them_saved(tmp_path, monkeypatch):
    experiment = tmp_path / "two.py"
    experiment.write_text(textwrap.dedent(EXPERIMENT))
    base = experiments.experiment_runs(experiments.load_experiment(str(experiment)))[0]
    base = dataclasses.replace(base, train=dataclasses.replace(base.train, steps=60))
    cfgs = [dataclasses.replace(base, seed=s) for s in (0, 1, 2)]
    reference = [tmp_path / f"reference{s}" for s in range(3)]
    _, params_ref = train.train_group(cfgs, reference, progress=False, checkpoint_every=20)

    class Interrupted(Exception):
        pass

    save = checkpoints.save

    def save_then_stop(mgr, step, state, keys):  # only the first seed gets its step-40 save
        save(mgr, step, state, keys)
        if step == 40:
            mgr.wait_until_finished()
            raise Interrupted

    run = [tmp_path / f"run{s}" for s in range(3)]
    monkeypatch.setattr(checkpoints, "save", save_then_stop)
    with pytest.raises(Interrupted):
        train.train_group(cfgs, run, progress=False, checkpoint_every=20)
    monkeypatch.setattr(checkpoints, "save", save)
    assert [checkpoints.steps(d) for d in run] == [[20, 40], [20], [20]]
    _, params = train.train_group(cfgs, run, progress=False, checkpoint_every=20)
    for a, b in zip(run, reference, strict=True):
        assert rows(a / runs.METRICS) == rows(b / runs.METRICS)
        assert rows(a / runs.EVAL) == rows(b / runs.EVAL)
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(params_ref), strict=True):
        np.testing.assert_array_equal(a, b)
