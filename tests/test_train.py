"""The pure train step, the loop and the run directory it writes."""

import dataclasses
import json

import jax
import numpy as np
import pytest

from pe_research import encodings, runs, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig

TINY = RunConfig(
    task=tasks.get("copy", alphabet=8),
    encoding=encodings.get("rope"),
    model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
    train=TrainConfig(steps=6, batch_size=8, train_length=4, warmup_steps=2, log_every=2),
    eval=EvalConfig(lengths=(4, 8), batch_size=8),
)

# Loss after each of the first three steps of TINY (seed 0) on CPU. If a change alters these on
# purpose (model, sampling, optimizer or initialisation), rerun this test, check the new values
# are sensible and paste them here.
GOLDEN_LOSSES = [2.90515, 3.51893, 2.96464]


def run_steps(cfg, n):
    keys = train.keys_from_seed(cfg.seed)
    graphdef, state = train.init_state(cfg, keys)
    step = train.make_train_step(cfg, graphdef)
    losses = []
    for _ in range(n):
        state, metrics = step(state, keys.data, keys.positions)
        losses.append(float(metrics["loss"]))
    return state, losses


def test_golden_train_step():
    _, losses = run_steps(TINY, 3)
    np.testing.assert_allclose(
        losses,
        GOLDEN_LOSSES,
        rtol=2e-3,
        err_msg="Training numbers changed. If the change was intended, update GOLDEN_LOSSES.",
    )


def test_same_seed_same_numbers_other_seed_other_numbers():
    state_a, losses_a = run_steps(TINY, 2)
    state_b, losses_b = run_steps(TINY, 2)
    _, losses_c = run_steps(dataclasses.replace(TINY, seed=1), 2)
    assert losses_a == losses_b
    assert losses_a != losses_c
    for x, y in zip(jax.tree.leaves(state_a.params), jax.tree.leaves(state_b.params), strict=True):
        np.testing.assert_array_equal(x, y)


def test_tiny_model_learns_copy_in_distribution(tmp_path):
    cfg = RunConfig(
        task=tasks.get("copy", alphabet=8),
        encoding=encodings.get("rope"),
        model=ModelConfig(num_layers=2, d_model=64, num_heads=4, mlp_dim=256),
        train=TrainConfig(steps=400, batch_size=32, train_length=8, warmup_steps=20, log_every=100),
        eval=EvalConfig(lengths=(2, 5, 8), batch_size=64),
    )
    train.train(cfg, tmp_path / "run", progress=False)
    rows = runs.read_jsonl(tmp_path / "run" / runs.EVAL)
    accuracy = np.mean([r["token_accuracy"] for r in rows])
    assert accuracy >= 0.95, rows


def test_run_directory_contents(tmp_path):
    run = tmp_path / "run"
    train.train(TINY, run, progress=False)
    config = json.loads((run / runs.CONFIG).read_text())
    assert config["encoding"] == {**encodings.to_dict(TINY.encoding), "name": "rope"}
    assert config["task"]["name"] == "copy"
    assert {"jax", "flax", "pe_research", "device"} <= set(config["versions"])
    assert runs.load_config(run) == TINY
    metrics = runs.read_jsonl(run / runs.METRICS)
    assert [m["step"] for m in metrics] == [2, 4, 6]
    assert {"loss", "token_accuracy", "grad_norm", "tokens_per_s"} <= set(metrics[0])
    assert "compile_s" in metrics[0]
    evals = runs.read_jsonl(run / runs.EVAL)
    assert [r["length"] for r in evals] == [4, 8]
    assert runs.is_done(run)


def test_finished_run_is_refused_unless_overwrite(tmp_path):
    run = tmp_path / "run"
    train.train(TINY, run, progress=False)
    with pytest.raises(FileExistsError, match="--overwrite"):
        train.train(TINY, run, progress=False)
    longer = dataclasses.replace(
        TINY, train=TrainConfig(steps=4, batch_size=8, train_length=4, log_every=1)
    )
    train.train(longer, run, overwrite=True, progress=False)
    # The old run's rows are gone, not mixed with the new ones.
    assert [m["step"] for m in runs.read_jsonl(run / runs.METRICS)] == [1, 2, 3, 4]


def test_diverging_run_stops_with_a_clear_message(tmp_path):
    explode = TrainConfig(
        steps=20,
        batch_size=8,
        train_length=4,
        learning_rate=1e30,
        warmup_steps=0,
        grad_clip=1e30,
        log_every=1,
    )
    cfg = dataclasses.replace(TINY, train=explode)
    with pytest.raises(train.TrainingDiverged, match="lower learning_rate"):
        train.train(cfg, tmp_path / "run", progress=False)
    assert not runs.is_done(tmp_path / "run")


def test_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 1}\n{"step": 2}\n{"ste')
    with pytest.warns(UserWarning, match="torn last line"):
        assert runs.read_jsonl(path) == [{"step": 1}, {"step": 2}]
