"""The attention normalizations beside the softmax: 1.5-entmax against bisection and its gradient
in float64, SSMax against its formula, stick-breaking against the loop formula, and the model and
config checks of each."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pe_research import encodings, normalizations
from pe_research import model as model_lib
from pe_research.config import ModelConfig, RunConfig
from pe_research.encodings import ForgettingGate, NoPE, RoPE
from pe_research.model import Transformer

CFG = ModelConfig(num_layers=2, d_model=32, num_heads=2, mlp_dim=64)
VOCAB, B, L = 12, 2, 9
RNG = np.random.default_rng(0)


def contiguous(length):
    return np.broadcast_to(np.arange(length, dtype=np.int32), (B, length))


def forward(enc):
    """Logits of the softmax model with `enc` (seed 0), run under jit."""
    model = Transformer(CFG, enc, VOCAB, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(model)
    tokens_BL = jax.random.randint(jax.random.key(1), (B, L), 0, VOCAB)
    pos_BL = jnp.broadcast_to(jnp.arange(L, dtype=jnp.int32), (B, L))
    run = jax.jit(lambda state: nnx.merge(graphdef, state)(tokens_BL, pos_BL))
    return np.asarray(run(state))


# -- 1.5-entmax and SSMax --------------------------------------------------------------------------


def entmax15_bisection(x):
    """p = [x / 2 - tau]_+^2 summing to 1, tau by bisection (float64)."""
    x = x / 2
    lo, hi = x.max() - 1.0, x.max()
    for _ in range(200):
        tau = (lo + hi) / 2
        lo, hi = (tau, hi) if np.sum(np.maximum(x - tau, 0) ** 2) > 1 else (lo, tau)
    return np.maximum(x - tau, 0) ** 2


def allowed_mask():
    allowed = np.broadcast_to(np.tril(np.ones((5, 7), bool), k=2), (2, 5, 7)).copy()
    allowed[1, :, 5:] = False  # padding keys
    return allowed


def test_entmax15_matches_bisection_and_its_gradient_in_float64():
    z = 3 * RNG.normal(size=(2, 3, 5, 7))
    allowed = allowed_mask()
    w = RNG.normal(size=z.shape)
    with jax.enable_x64(True):
        p = np.asarray(normalizations.entmax15(jnp.asarray(z), jnp.asarray(allowed)))

        @jax.jit
        def f(z):
            return jnp.sum(jnp.asarray(w) * normalizations.entmax15(z, jnp.asarray(allowed)))

        grad = np.asarray(jax.grad(f)(jnp.asarray(z)))
        numeric = np.zeros_like(z)
        for idx in np.ndindex(*z.shape):
            step = np.zeros_like(z)
            step[idx] = 1e-6
            numeric[idx] = (f(jnp.asarray(z + step)) - f(jnp.asarray(z - step))) / 2e-6
    expected = np.zeros_like(z)
    for b, h, i in np.ndindex(2, 3, 5):
        expected[b, h, i, allowed[b, i]] = entmax15_bisection(z[b, h, i, allowed[b, i]])
    np.testing.assert_allclose(p, expected, atol=1e-12)
    assert (p == 0).mean() > 0.3  # sparse: many keys get exactly 0
    np.testing.assert_allclose(grad, numeric, atol=1e-7)


def test_ssmax_is_softmax_of_log_n_scaled_logits():
    z = RNG.normal(size=(2, 3, 5, 7))
    allowed = allowed_mask()
    s = np.array([0.5, 1.0, 2.0])
    p = np.asarray(
        normalizations.ssmax(jnp.asarray(z), jnp.asarray(allowed), scale_H=jnp.asarray(s))
    )
    for b, h, i in np.ndindex(2, 3, 5):
        a = allowed[b, i]
        n = a.sum()
        e = np.exp(s[h] * np.log(n) * z[b, h, i, a])
        np.testing.assert_allclose(p[b, h, i, a], e / e.sum(), rtol=1e-5)
        assert (p[b, h, i, ~a] == 0).all()


@pytest.mark.parametrize("normalization", ["ssmax", "entmax15"])
def test_normalizations_train_and_refuse_dot_product(normalization):
    cfg = ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=16)
    cfg = dataclasses.replace(cfg, normalization=normalization)
    model = model_lib.Transformer(cfg, encodings.get("nape"), 12, rngs=nnx.Rngs(0))
    graphdef, params = nnx.split(model)
    tokens = jnp.asarray(RNG.integers(0, 12, (2, 6)))
    pos = jnp.asarray(contiguous(6))

    @jax.jit
    @jax.grad
    def grad(params):
        return jnp.mean(nnx.merge(graphdef, params)(tokens, pos) ** 2)

    norm = nnx.to_pure_dict(grad(params))["blocks"][0]["attn"].get("norm", {})
    if normalization == "ssmax":
        assert float(jnp.abs(norm["scale_H"]).max()) > 0
    else:
        assert norm == {}
    with pytest.raises(ValueError, match="set --model.attention to einsum or auto"):
        dataclasses.replace(cfg, attention="dot_product").check()


# -- stick-breaking attention ----------------------------------------------------------------------


def loop_stick_breaking(z_LM, allowed_LM):
    """Tan et al.'s A_ij = beta_ij prod_{j<k<i} (1 - beta_ik), beta = sigmoid(z), j < i allowed,
    as float64 loops."""
    beta = 1.0 / (1.0 + np.exp(-z_LM))
    L, M = z_LM.shape
    out = np.zeros((L, M))
    for i in range(L):
        for j in range(i):
            if allowed_LM[i, j]:
                out[i, j] = beta[i, j] * np.prod(
                    [1.0 - beta[i, k] for k in range(j + 1, i) if allowed_LM[i, k]]
                )
    return out


def test_stick_breaking_equals_the_loop_formula():
    z_BHLM = jax.random.normal(jax.random.key(0), (2, 2, 7, 7)) * 2.0
    valid_BL = jnp.array([[True] * 7, [True] * 5 + [False] * 2])
    allowed_BLM = valid_BL[:, None, :] & jnp.tril(jnp.ones((7, 7), bool))[None]
    got_BHLM = np.asarray(normalizations.stick_breaking(z_BHLM, allowed_BLM))
    for b in range(2):
        for h in range(2):
            expected = loop_stick_breaking(
                np.asarray(z_BHLM[b, h], np.float64), np.asarray(allowed_BLM[b])
            )
            np.testing.assert_allclose(got_BHLM[b, h], expected, atol=1e-6, rtol=1e-5)
    assert (got_BHLM.sum(-1) <= 1 + 1e-6).all() and (got_BHLM[:, :, 0] == 0).all()


def test_stick_breaking_model_is_causal_and_takes_any_encoding():
    cfg = dataclasses.replace(CFG, normalization="stick_breaking")
    for enc in (NoPE(), RoPE(), ForgettingGate()):
        model = Transformer(cfg, enc, VOCAB, rngs=nnx.Rngs(0))
        tokens_BL = jax.random.randint(jax.random.key(1), (B, L), 0, VOCAB)
        pos_BL = jnp.broadcast_to(jnp.arange(L, dtype=jnp.int32), (B, L))
        t = 5
        before = model(tokens_BL, pos_BL)
        after = model(tokens_BL.at[:, t].set((tokens_BL[:, t] + 1) % VOCAB), pos_BL)
        np.testing.assert_allclose(before[:, :t], after[:, :t], atol=1e-5)
        assert not np.allclose(before[:, t:], after[:, t:], atol=1e-5)
        # Different weights from the softmax model with the same parameters.
        assert not np.allclose(before, forward(enc), atol=1e-4)
    # The recorded weights: strictly earlier keys only, rows summing to less than 1.
    model.set_attributes(capture_attention=True)
    _, sown = nnx.capture(model, nnx.Intermediate)(tokens_BL, pos_BL)
    probs_BHLM = np.asarray(nnx.to_pure_dict(sown)["blocks"][0]["attn"][model_lib.PROBS][0])
    assert (probs_BHLM[:, :, np.arange(L), np.arange(L)] == 0).all()  # no query reads itself
    assert (probs_BHLM.sum(-1) < 1).all()  # no normalisation: some stick is always left


def test_stick_breaking_config_errors_and_round_trip():
    with pytest.raises(ValueError, match="defined for causal models only"):
        ModelConfig(normalization="stick_breaking", causal=False).check()
    with pytest.raises(ValueError, match="computes a softmax only"):
        ModelConfig(normalization="stick_breaking", attention="dot_product").check()
    with pytest.raises(ValueError, match="--model.normalization to one of softmax, stick_breaking"):
        ModelConfig(normalization="sparsemax").check()
    cfg = RunConfig(encoding=NoPE(), model=ModelConfig(normalization="stick_breaking"))
    d = cfg.to_dict()
    assert d["model"]["normalization"] == "stick_breaking"
    assert "normalization" not in RunConfig().identity()["model"]  # a default: not in the run id
    assert RunConfig.from_dict(json.loads(json.dumps(d))) == cfg
