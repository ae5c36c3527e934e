"""Analysis of trained runs: a clear error for unfinished runs, and the command end to end."""

import dataclasses
import shutil

import jax
import numpy as np
import pytest
from flax import nnx

from pe_research import cli, runs, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.encodings.rotary import RoPE
from pe_research.essay import analysis

TINY = RunConfig(
    task=tasks.get("copy"),
    encoding=RoPE(),
    model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
    train=TrainConfig(steps=5, batch_size=8, train_length=4, log_every=5),
    eval=EvalConfig(lengths=(4,), batch_size=8),
)


def test_unfinished_run_is_a_clear_error(tmp_path, capsys):
    runs.prepare(tmp_path / "run", TINY)  # config.json, no DONE
    with pytest.raises(ValueError, match="no DONE"):
        analysis.analyze(tmp_path / "run")
    with pytest.raises(SystemExit):
        cli.main(["analyze", str(tmp_path / "run")])
    assert "no DONE" in capsys.readouterr().err


def test_analyze_a_tiny_rope_run(tmp_path, capsys):
    run = tmp_path / "run"
    graphdef, params = train.train(TINY, run, progress=False)
    cli.main(["analyze", str(run)])
    printed = capsys.readouterr().out
    assert f"Parameters: the run's checkpoint at step {TINY.train.steps}." in printed
    assert "Frequency usage (Barbero et al. 2025)" in printed
    for name in ("attention_1x.png", "attention_4x.png", "frequency_usage.png", "summary.txt"):
        assert (run / "analysis" / name).stat().st_size > 0, name
    assert runs.find_runs([tmp_path]) == [run]  # the analysis folder is not a run
    _, loaded, _ = analysis.trained_model(run, TINY)
    for a, b in zip(jax.tree.leaves(loaded), jax.tree.leaves(params), strict=True):
        np.testing.assert_array_equal(a, b)  # the checkpoint holds the trained parameters

    # A run without checkpoints (older code) is retrained with the same program, exactly.
    shutil.rmtree(run / "checkpoints")
    _, retrained, source = analysis.trained_model(run, TINY)
    diffs = source.split("largest difference from the run's logged training metrics: ")[1]
    assert diffs and all(d.split(" ")[1] == "0" for d in diffs.split(", ")), source
    for a, b in zip(jax.tree.leaves(retrained), jax.tree.leaves(params), strict=True):
        np.testing.assert_array_equal(a, b)

    @jax.jit
    def forward(params, tokens_BL, pos_BL, valid_BL):
        return analysis.attention_layers(nnx.merge(graphdef, params), tokens_BL, pos_BL, valid_BL)

    seq = analysis.evaluation_sequence(TINY, 4)
    fwd = forward(params, seq["tokens"], seq["pos"], seq["valid"])
    probs_HLM = np.asarray(fwd["layers"][0]["probs"][0])
    np.testing.assert_allclose(probs_HLM.sum(-1), 1.0, rtol=1e-5)
    assert np.allclose(np.triu(probs_HLM, k=1), 0.0)  # causal
    # The maps come from the model's own forward pass: its logits are the model's.
    logits = jax.jit(lambda p, *inputs: nnx.merge(graphdef, p)(*inputs))(
        params, seq["tokens"], seq["pos"], seq["valid"]
    )
    np.testing.assert_allclose(fwd["logits"], logits, atol=1e-6)


def test_byte_lm_analyses_the_validation_split():
    """The analysed sequence is evaluation's: a window of the held-out split, not of training's."""
    cfg = dataclasses.replace(TINY, task=tasks.get("byte_lm"), eval=EvalConfig(batch_size=4))
    length = 64
    seq = analysis.evaluation_sequence(cfg, length)
    assert seq["tokens"].shape == (1, length)
    window = np.append(np.asarray(seq["tokens"][0]), np.asarray(seq["targets"][0, -1]))
    validation = cfg.task.held_out().split_bytes().tobytes()
    assert window.astype(np.uint8).tobytes() in validation

    k_task, _ = tasks.length_keys(jax.random.key(cfg.eval.seed), length)
    batch = tasks.eval_batch(cfg.task, k_task, 4, length, pad_to=tasks.bucket(length), causal=True)
    np.testing.assert_array_equal(seq["tokens"], batch.inputs[:1])
