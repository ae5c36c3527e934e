"""PaTH (Householder products of the keys) against explicit matrix products in float64, its
precision in float32, its causality, and a few training steps on CPU."""

import dataclasses
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from encoding_inputs import DIMS, qk

from pe_research import encodings, runs
from pe_research.config import ModelConfig, RunConfig
from pe_research.encodings import PaTH
from pe_research.encodings.path import householder_logits, unit_lower_inverse


def householder_loop(q, k, w, beta):
    """q_i^T H_i H_(i-1) ... H_(j+1) k_j as the product of explicit matrices, float64."""
    B_, H_, n, d = q.shape
    out = np.zeros((B_, H_, n, n))
    for b in range(B_):
        for h in range(H_):
            for i in range(n):
                prod = np.eye(d)
                for j in range(i, -1, -1):
                    out[b, h, i, j] = q[b, h, i] @ prod @ k[b, h, j]
                    prod = prod @ (np.eye(d) - beta[b, h, j] * np.outer(w[b, h, j], w[b, h, j]))
    return out


@pytest.mark.parametrize("length", [5, 37])  # one chunk; three chunks, the last one partial
def test_path_logits_are_the_product_of_householders_in_float64(length):
    rng = np.random.default_rng(length)
    q, k, w = (rng.normal(size=(1, 2, length, 6)) for _ in range(3))
    w /= np.linalg.norm(w, axis=-1, keepdims=True)
    beta = rng.uniform(0.0, 2.0, (1, 2, length))
    with jax.enable_x64(True):
        got = np.asarray(householder_logits(*map(jnp.asarray, (q, k, w, beta))))
    np.testing.assert_allclose(got, householder_loop(q, k, w, beta), atol=1e-11)
    assert (got[..., np.triu_indices(length, 1)[0], np.triu_indices(length, 1)[1]] == 0).all()


@pytest.mark.parametrize("run", [16, 40, 64])
def test_path_logits_keep_float32_precision_on_a_repeated_token(run):
    # One token repeated (identical w) from position 3 on, across chunk boundaries, at beta 1.9:
    # a power series for the chunk inverse cancels here (errors of 3e-2 to 7e-2 at 32-64).
    rng = np.random.default_rng(run)
    length = run + 3
    q, k, w = (rng.normal(size=(1, 1, length, 8)) for _ in range(3))
    w[:, :, 3:] = w[:, :, 3]
    w /= np.linalg.norm(w, axis=-1, keepdims=True)
    beta = np.full((1, 1, length), 1.9)
    inputs = [x.astype(np.float32) for x in (q, k, w, beta)]
    want = householder_loop(*(x.astype(np.float64) for x in inputs))
    got = np.asarray(householder_logits(*map(jnp.asarray, inputs)))
    assert got.dtype == np.float32
    assert np.abs(got - want).max() < 1e-5 * np.abs(want).max()


def test_path_reads_unit_householders_from_the_keys_and_is_causal_only():
    enc = PaTH()
    params = enc.init_layer(jax.random.key(6), DIMS)
    _, k = qk(6)
    householders = jax.jit(enc.householders)
    w, beta = householders(params, k)
    np.testing.assert_allclose(np.linalg.norm(w, axis=-1), 1.0, atol=1e-5)
    assert (0 < np.asarray(beta)).all() and (np.asarray(beta) < 2).all()
    # The short convolution reads earlier keys only: a later key leaves earlier w unchanged.
    k2 = k.copy()
    k2[:, 4] += 1.0
    w2, _ = householders(params, k2)
    np.testing.assert_allclose(w[:, :, :4], w2[:, :, :4], atol=1e-6)
    with pytest.raises(ValueError, match="causal models only"):
        enc.check(dataclasses.replace(DIMS, causal=False), 0)
    with pytest.raises(ValueError, match="conv_size must be an integer >= 1"):
        PaTH(conv_size=0).check(DIMS, 0)


def test_causal_only_encodings_are_refused_for_encoders_before_training():
    for name in ("path",):
        cfg = RunConfig(encoding=encodings.get(name), model=ModelConfig(causal=False))
        with pytest.raises(ValueError, match="causal models only"):
            cfg.check()


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 9, 13, 16])
def test_unit_lower_inverse_is_the_inverse_in_float64(size):
    a = np.tril(np.random.default_rng(size).normal(size=(3, size, size)), k=-1)
    with jax.enable_x64(True):
        got = np.asarray(unit_lower_inverse(jnp.asarray(a)))
    np.testing.assert_allclose(got, np.linalg.inv(np.eye(size) + a), rtol=1e-10, atol=1e-10)


PATH_STEPS = """
import sys
from pe_research import encodings, tasks, train
from pe_research.config import ModelConfig, RunConfig, TrainConfig
cfg = RunConfig(task=tasks.get("copy"), encoding=encodings.get("path"),
                model=ModelConfig(num_layers=1),
                train=TrainConfig(steps=3, batch_size=64, train_length=16, length_buckets=2))
train.train(cfg, sys.argv[1], progress=False)
"""


def test_path_trains_past_its_first_step_on_cpu(tmp_path):
    """The configuration whose second step deadlocked XLA's CPU runtime while PaTH's inverse was
    a triangular solve: three steps must finish, in a process of their
    own so that a deadlock fails the test instead of hanging the suite."""
    run = tmp_path / "run"
    try:
        subprocess.run(
            [sys.executable, "-c", PATH_STEPS, str(run)], check=True, timeout=240,
            capture_output=True, text=True,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("PaTH's training step did not finish 3 steps in 240 s (a deadlock?)")
    assert [r["step"] for r in runs.read_jsonl(run / runs.METRICS)][-1] == 3
