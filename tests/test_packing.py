"""Seeds packed under vmap, and many devices, give the numbers of one model on one device."""

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from pe_research import encodings, runs, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.training import hyperparameters

TINY = RunConfig(
    task=tasks.get("copy", alphabet=8),
    encoding=encodings.get("alibi"),
    model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
    train=TrainConfig(steps=4, batch_size=8, train_length=4, warmup_steps=1, log_every=2),
    eval=EvalConfig(lengths=(4,), batch_size=8),
)
SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """Each seed trained by itself on one device: the reference numbers and parameters."""
    root = tmp_path_factory.mktemp("alone")
    out = {}
    for s in SEEDS:
        _, params = train.train(dataclasses.replace(TINY, seed=s), root / f"s{s}", progress=False)
        out[s] = (numbers(root / f"s{s}"), params)
    return out


def numbers(run_dir):
    metrics = runs.read_jsonl(run_dir / runs.METRICS)
    evals = runs.read_jsonl(run_dir / runs.EVAL)
    return [m["loss"] for m in metrics] + [e["token_accuracy"] for e in evals]


def test_packed_seeds_equal_one_by_one(tmp_path, alone):
    cfgs = [dataclasses.replace(TINY, seed=s) for s in SEEDS]
    packed_dirs = [tmp_path / f"packed{s}" for s in SEEDS]
    _, params_K = train.train_group(cfgs, packed_dirs, progress=False)
    for k, s in enumerate(SEEDS):
        expected, params = alone[s]
        np.testing.assert_allclose(numbers(packed_dirs[k]), expected, rtol=1e-5, atol=1e-6)
        for a, b in zip(jax.tree.leaves(params_K), jax.tree.leaves(params), strict=True):
            np.testing.assert_allclose(a[k], b, rtol=1e-5, atol=1e-6)
        assert runs.is_done(packed_dirs[k])
    # Different seeds really are different runs.
    assert numbers(packed_dirs[0]) != numbers(packed_dirs[1])


def test_group_refuses_runs_that_differ_in_more_than_the_seed(tmp_path):
    other = dataclasses.replace(TINY, seed=1, encoding=encodings.get("nope"))
    with pytest.raises(ValueError, match="differ only in their seed"):
        train.train_group([TINY, other], [tmp_path / "a", tmp_path / "b"], progress=False)


MULTI_DEVICE = textwrap.dedent(
    """
    import dataclasses, json, sys
    import jax
    from pe_research import train, runs
    from pe_research.config import RunConfig
    from pathlib import Path

    assert jax.local_device_count() == 8, jax.devices()
    base = RunConfig.from_dict(json.loads(sys.argv[1]))
    out = Path(sys.argv[2])
    for k in (2, 8):  # 2 seeds: the batch is split over devices; 8 seeds: one per device
        cfgs = [dataclasses.replace(base, seed=s) for s in range(k)]
        train.train_group(cfgs, [out / f"k{k}" / f"s{s}" for s in range(k)], progress=False)
    """
)


def test_eight_devices_match_one_device(tmp_path, alone):
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    out = subprocess.run(
        [sys.executable, "-c", MULTI_DEVICE, json.dumps(TINY.to_dict()), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert jax.local_device_count() == 1
    for s in SEEDS:
        for k in (2, 8):
            if s < k:
                np.testing.assert_allclose(
                    numbers(tmp_path / f"k{k}" / f"s{s}"), alone[s][0], rtol=1e-5, atol=1e-5
                )


def test_evaluation_encodings_share_one_training(tmp_path):
    """Context extension without retraining: RoPE trained once, evaluated plain and scaled."""
    rope = dataclasses.replace(TINY, encoding=encodings.get("rope"), eval=EvalConfig(lengths=(8,)))
    scaled = dataclasses.replace(
        rope, eval_encoding=encodings.get("rope", scaling={"rope_type": "linear", "factor": 2})
    )
    plain_dir, scaled_dir = tmp_path / "plain", tmp_path / "scaled"
    train.train_group([rope, scaled], [plain_dir, scaled_dir], progress=False)
    plain_metrics = runs.read_jsonl(plain_dir / runs.METRICS)
    assert plain_metrics == runs.read_jsonl(scaled_dir / runs.METRICS)
    plain_eval = runs.read_jsonl(plain_dir / runs.EVAL)[0]
    scaled_eval = runs.read_jsonl(scaled_dir / runs.EVAL)[0]
    assert plain_eval["loss"] != scaled_eval["loss"]
    assert runs.load_config(scaled_dir).eval_encoding == scaled.eval_encoding


def test_eval_encoding_must_fit_the_trained_parameters(tmp_path):
    cfg = dataclasses.replace(
        TINY, encoding=encodings.get("rope"), eval_encoding=encodings.get("learned")
    )
    with pytest.raises(ValueError, match="different parameters"):
        train.train(cfg, tmp_path / "run", progress=False)


@pytest.mark.parametrize("sites", ["residual", "t5"])
def test_packed_seeds_with_dropout_each_drop_their_own_units(tmp_path, sites):
    """Dropout keys come from each run's seed: packed seeds train exactly as each alone, and
    dropout changes the training (the keys reach the model)."""
    drop = dataclasses.replace(
        TINY, model=dataclasses.replace(TINY.model, dropout=0.3, dropout_sites=sites)
    )
    cfgs = [dataclasses.replace(drop, seed=s) for s in (0, 1)]
    train.train_group(cfgs, [tmp_path / "packed0", tmp_path / "packed1"], progress=False)
    for s in (0, 1):
        train.train(cfgs[s], tmp_path / f"alone{s}", progress=False)
        np.testing.assert_allclose(
            numbers(tmp_path / f"packed{s}"), numbers(tmp_path / f"alone{s}"), rtol=1e-5, atol=1e-6
        )
    train.train(dataclasses.replace(TINY, seed=0), tmp_path / "plain", progress=False)
    assert numbers(tmp_path / "alone0")[:2] != numbers(tmp_path / "plain")[:2]
    # Each seed and step has its own stream; a model without dropout has none.
    key_data = [
        tuple(np.asarray(jax.random.key_data(hyperparameters.dropout_key(values, step))))
        for values in map(hyperparameters.values, [*cfgs, dataclasses.replace(drop, seed=2**20)])
        for step in (0, 1)
    ]
    assert len(set(key_data)) == 6
    assert hyperparameters.dropout_key(hyperparameters.values(TINY), 0) is None
