"""Properties of CoPE (Golovneva et al., 2024): positions, causality, checks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pe_research.config import ModelConfig
from pe_research.encodings.base import Dims
from pe_research.encodings.contextual import (
    CoPE,
    contextual_positions,
    interpolate_position_logits,
)
from pe_research.model import Transformer


def _jitted_model(enc):
    """The model, built and run under jit (eager NNX dispatch is slow on CPU)."""
    cfg = ModelConfig(num_layers=1, d_model=32, num_heads=2, mlp_dim=64)
    build = nnx.jit(lambda: Transformer(cfg, enc, vocab_size=20, rngs=nnx.Rngs(0)))
    graphdef, state = nnx.split(build())
    forward = jax.jit(
        lambda state, tokens_BL, pos_BL: nnx.merge(graphdef, state)(tokens_BL, pos_BL)
    )
    return lambda tokens_BL, pos_BL: forward(state, tokens_BL, pos_BL)


def test_positions_are_the_token_count_when_every_gate_is_one():
    L = 6
    pos_BHLM = np.asarray(contextual_positions(jnp.ones((1, 1, L, L))))[0, 0]
    i, j = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    np.testing.assert_array_equal(pos_BHLM, np.where(j <= i, i - j + 1, 0))


def test_positions_count_only_the_gates_between_key_and_query():
    gates_LM = jnp.array([[0.5, 9.0, 9.0], [0.25, 1.0, 9.0], [0.0, 0.5, 0.75]])
    pos_LM = np.asarray(contextual_positions(gates_LM[None, None]))[0, 0]
    # Gates of future keys (9.0) never count; p_ij sums g_ik for k = j..i.
    np.testing.assert_allclose(pos_LM, [[0.5, 0, 0], [1.25, 1.0, 0], [1.25, 1.25, 0.75]])


def test_interpolation_weights_floor_and_ceil():
    logits_BHLP = jnp.array([10.0, 20.0, 40.0])[None, None, None, :]
    pos_BHLM = jnp.array([0.0, 0.25, 1.5, 2.0])[None, None, None, :]
    out = np.asarray(interpolate_position_logits(logits_BHLP, pos_BHLM))[0, 0, 0]
    np.testing.assert_allclose(out, [10.0, 12.5, 30.0, 40.0])
    # A position outside the table is loud, not clamped.
    assert np.isnan(np.asarray(interpolate_position_logits(logits_BHLP, pos_BHLM + 2.0))).any()


def test_bias_shape_dtype_and_clamp_to_npos_max():
    enc = CoPE(npos_max=3, init_std=1.0)
    dims = Dims(d_model=8, num_heads=2, head_dim=4)
    params = enc.init_layer(jax.random.key(0), dims)
    assert params["table_KP"].shape == (4, 3)
    kq, kk = jax.random.split(jax.random.key(1))
    q_BLHK = jax.random.normal(kq, (2, 7, 2, 4)).astype(jnp.bfloat16)
    k_BMHK = jax.random.normal(kk, (2, 7, 2, 4)).astype(jnp.bfloat16)
    pos_BL = jnp.zeros((2, 7), jnp.int32)
    bias_BHLM = jax.jit(enc.bias)(params, q_BLHK, k_BMHK, pos_BL, pos_BL)
    assert bias_BHLM.shape == (2, 2, 7, 7) and bias_BHLM.dtype == jnp.float32
    assert np.isfinite(np.asarray(bias_BHLM)).all()  # long contexts clamp to the last vector
    # The first key of the last query counts ~7 gates > npos_max - 1: it reads e[2] exactly.
    q32 = q_BLHK.astype(jnp.float32)
    far_BH = jnp.einsum("BHK,K->BH", q32[:, -1], params["table_KP"][:, 2]) * 4**-0.5
    gates_BHM = jax.nn.sigmoid(
        jnp.einsum("BHK,BMHK->BHM", q32[:, -1], k_BMHK.astype(jnp.float32)) * 0.5
    )
    assert (np.asarray(gates_BHM).sum(-1) >= 2).all()
    np.testing.assert_allclose(bias_BHLM[:, :, -1, 0], far_BH, rtol=1e-5)


def test_model_output_shape_and_causality():
    model = _jitted_model(CoPE(npos_max=8, init_std=1.0))
    L, t = 10, 6
    tokens_BL = jax.random.randint(jax.random.key(2), (2, L), 0, 20)
    pos_BL = jnp.tile(jnp.arange(L, dtype=jnp.int32)[None, :], (2, 1))
    logits_BLV = model(tokens_BL, pos_BL)
    assert logits_BLV.shape == (2, L, 20)
    perturbed_BLV = model(tokens_BL.at[:, t].set((tokens_BL[:, t] + 1) % 20), pos_BL)
    np.testing.assert_allclose(logits_BLV[:, :t], perturbed_BLV[:, :t], atol=1e-5)
    assert not np.allclose(logits_BLV[:, t:], perturbed_BLV[:, t:])


def test_check_rejects_bidirectional_models_and_tiny_tables():
    CoPE().check(Dims(32, 2, 16, causal=True), max_position=100)
    with pytest.raises(ValueError, match="bidirectional"):
        CoPE().check(Dims(32, 2, 16, causal=False), max_position=100)
    with pytest.raises(ValueError, match="npos_max"):
        CoPE(npos_max=1).check(Dims(32, 2, 16), max_position=100)
