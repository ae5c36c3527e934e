"""The forgetting gate (Lin et al., 2025) against the paper's loop formula: its initial decay,
NoPE when every gate is open, the bidirectional mirror, and queries as a prefix of the keys."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pe_research.config import ModelConfig
from pe_research.encodings import ForgettingGate, NoPE
from pe_research.encodings.contextual import forgetting_bias
from pe_research.model import Transformer

CFG = ModelConfig(num_layers=2, d_model=32, num_heads=2, mlp_dim=64)
DIMS = CFG.dims()
VOCAB, B, L = 12, 2, 9


def forward(enc, cfg=CFG, edit=None):
    """Logits of the model with `enc` (seed 0), after `edit(model)`, run under jit."""
    model = Transformer(cfg, enc, VOCAB, rngs=nnx.Rngs(0))
    if edit is not None:
        edit(model)
    graphdef, state = nnx.split(model)
    tokens_BL = jax.random.randint(jax.random.key(1), (B, L), 0, VOCAB)
    pos_BL = jnp.broadcast_to(jnp.arange(L, dtype=jnp.int32), (B, L))
    run = jax.jit(lambda state: nnx.merge(graphdef, state)(tokens_BL, pos_BL))
    return np.asarray(run(state))


def loop_forgetting_bias(k_MHK, w_HK, b_H):
    """The paper's D_ij = sum_{l=j+1..i} log f_l, f_l = sigmoid(w . k_l + b), in float64 loops;
    for keys after the query (bidirectional), the sum over l = i+1..j."""
    M, H, _ = k_MHK.shape
    log_f_HM = np.zeros((H, M))
    for h in range(H):
        for t in range(M):
            log_f_HM[h, t] = -np.log1p(np.exp(-(k_MHK[t, h] @ w_HK[h] + b_H[h])))
    out_HLM = np.zeros((H, M, M))
    for h in range(H):
        for i in range(M):
            for j in range(M):
                lo, hi = min(i, j), max(i, j)
                out_HLM[h, i, j] = sum(log_f_HM[h, t] for t in range(lo + 1, hi + 1))
    return out_HLM


def test_forgetting_bias_equals_the_loop_formula():
    k_BMHK = np.asarray(jax.random.normal(jax.random.key(0), (1, 7, 2, 4)), np.float64)
    params = {
        "w_HK": jnp.array([[0.5, -1.0, 0.25, 0.0], [1.0, 0.5, -0.5, 2.0]]),
        "b_H": jnp.array([2.0, 1.0]),
    }
    q_BLHK = jnp.zeros((1, 7, 2, 4))
    pos_BL = jnp.zeros((1, 7), jnp.int32)
    got_BHLM = ForgettingGate().bias(
        params, q_BLHK, jnp.asarray(k_BMHK, jnp.float32), pos_BL, pos_BL
    )
    assert got_BHLM.shape == (1, 2, 7, 7) and got_BHLM.dtype == jnp.float32
    expected_HLM = loop_forgetting_bias(
        k_BMHK[0], np.asarray(params["w_HK"]), np.asarray(params["b_H"])
    )
    np.testing.assert_allclose(np.asarray(got_BHLM[0]), expected_HLM, atol=1e-6, rtol=1e-6)
    # Data-dependent: different keys, different decays.
    other_BHLM = ForgettingGate().bias(
        params, q_BLHK, jnp.asarray(-k_BMHK, jnp.float32), pos_BL, pos_BL
    )
    assert not np.allclose(got_BHLM, other_BHLM)


def test_forgetting_starts_as_a_linear_decay_of_sigmoid_init_bias():
    enc = ForgettingGate(init_bias=3.0)
    params = enc.init_layer(jax.random.key(0), DIMS)
    k_BMHK = jax.random.normal(jax.random.key(1), (1, 5, DIMS.num_heads, DIMS.head_dim))
    pos_BL = jnp.zeros((1, 5), jnp.int32)
    bias_LM = np.asarray(enc.bias(params, k_BMHK, k_BMHK, pos_BL, pos_BL))[0, 0]
    i, j = np.meshgrid(np.arange(5), np.arange(5), indexing="ij")
    np.testing.assert_allclose(bias_LM, -np.abs(i - j) * np.log1p(np.exp(-3.0)), rtol=1e-5)


def test_forgetting_with_every_gate_one_is_nope():
    def open_gates(model):
        for block in model.blocks:
            block.attn.pe["b_H"] = nnx.Param(jnp.full((CFG.num_heads,), 100.0))

    log_f = jax.nn.log_sigmoid(jnp.full((1, 1, 4), 100.0))
    assert np.all(np.asarray(forgetting_bias(log_f)) == 0.0)
    np.testing.assert_allclose(
        forward(ForgettingGate(), edit=open_gates), forward(NoPE()), atol=1e-6
    )
    # At its initial gates (0.9933) it already differs from NoPE.
    assert not np.allclose(forward(ForgettingGate()), forward(NoPE()), atol=1e-6)


def test_forgetting_bidirectional_is_the_mirror_and_bad_init_is_refused():
    log_f_BHL = jnp.log(jnp.array([[[0.9, 0.5, 0.8, 0.7]]]))
    bias_LM = np.asarray(forgetting_bias(log_f_BHL))[0, 0]
    np.testing.assert_allclose(bias_LM, bias_LM.T)
    assert bias_LM[3, 1] == pytest.approx(np.log(0.8 * 0.7), rel=1e-6)
    ForgettingGate().check(dataclasses.replace(DIMS, causal=False), 100)
    with pytest.raises(ValueError, match="init_bias must be a finite number"):
        ForgettingGate(init_bias=float("inf")).check(DIMS, 100)


def test_forgetting_queries_are_the_first_tokens_of_the_keys():
    enc = ForgettingGate()
    params = {"w_HK": jnp.ones((2, 4)), "b_H": jnp.array([1.0, 3.0])}
    k_BMHK = jax.random.normal(jax.random.key(3), (1, 8, 2, 4))
    pos = jnp.zeros((1, 8), jnp.int32)
    full_BHLM = enc.bias(params, k_BMHK, k_BMHK, pos, pos)
    first_BHLM = enc.bias(params, k_BMHK[:, :3], k_BMHK, pos[:, :3], pos)
    np.testing.assert_array_equal(first_BHLM, full_BHLM[:, :, :3])
    with pytest.raises(ValueError, match="at most as many queries as keys"):
        enc.bias(params, k_BMHK, k_BMHK[:, :3], pos, pos[:, :3])
