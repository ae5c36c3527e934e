"""The forgetting gate (Lin et al., 2025) and per-layer mixtures (RoPE/NoPE hybrids)."""

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
from pe_research.encodings import ForgettingGate, Mixture, NoPE, RNoPE, RoPE
from pe_research.encodings.base import Dims
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


# -- forgetting gate ------------------------------------------------------------------------------


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


# -- per-layer mixtures ---------------------------------------------------------------------------


def test_mixtures_of_one_member_equal_that_member():
    np.testing.assert_array_equal(forward(Mixture(pattern=("rope", "rope"))), forward(RoPE()))
    np.testing.assert_array_equal(forward(Mixture(pattern=("nope",))), forward(NoPE()))
    np.testing.assert_array_equal(forward(RNoPE(nope_every=1)), forward(NoPE()))
    mixed = forward(Mixture(pattern=("rope", "nope")))
    assert not np.allclose(mixed, forward(RoPE())) and not np.allclose(mixed, forward(NoPE()))


def test_layer_assignment():
    cfg = dataclasses.replace(CFG, num_layers=8)
    model = nnx.eval_shape(lambda: Transformer(cfg, RNoPE(base=500.0), VOCAB, rngs=nnx.Rngs(0)))
    assert [b.attn.encoding for b in model.blocks] == [RoPE(base=500.0)] * 3 + [NoPE()] + [
        RoPE(base=500.0)
    ] * 3 + [NoPE()]
    assert model.encoding == RNoPE(base=500.0)  # the embedding hooks stay the top-level one's
    mix = Mixture(pattern=("rope", "alibi", "nope"))
    cfg5 = dataclasses.replace(CFG, num_layers=5)
    model = nnx.eval_shape(lambda: Transformer(cfg5, mix, VOCAB, rngs=nnx.Rngs(0)))
    assert [b.attn.encoding.name for b in model.blocks] == [
        "rope",
        "alibi",
        "nope",
        "rope",
        "alibi",
    ]
    assert mix.members() == (RoPE(), encodings.ALiBi(), NoPE())
    # Hooks called on the mixture itself (a single layer probed alone) are its layer-0 member's.
    q = jax.random.normal(jax.random.key(0), (1, 4, 2, 8))
    pos = jnp.arange(4)[None]
    for a, b in zip(mix.rotate({}, q, q, pos, pos), RoPE().rotate({}, q, q, pos, pos), strict=True):
        np.testing.assert_array_equal(a, b)


def test_mixtures_round_trip_through_config_json():
    for enc in (Mixture(pattern=("rope", "rope", "rope", "nope")), RNoPE(nope_every=3, base=5e5)):
        cfg = RunConfig(encoding=enc)
        back = RunConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
        assert back == cfg and hash(back.encoding) == hash(enc)
    # A list (as JSON or a command line gives) becomes a tuple: the encoding stays hashable.
    listed = encodings.get("mixture", pattern=["rope", "nope"])
    assert listed == Mixture(pattern=("rope", "nope")) and hash(listed)
    assert Mixture(pattern=("rope", "nope")).label() == "mixture(rope,nope)"


def test_mixture_errors_name_the_constraint():
    with pytest.raises(
        ValueError, match="unknown encoding 'rotary'. Known encodings: nope, .*rope"
    ):
        Mixture(pattern=("rope", "rotary")).check(DIMS, 100)
    with pytest.raises(ValueError, match="'sinusoidal' adds its vectors to the token embedding"):
        Mixture(pattern=("rope", "sinusoidal")).check(DIMS, 100)
    with pytest.raises(ValueError, match="members need different positions"):
        Mixture(pattern=("rope", "rope_nd")).check(DIMS, 100)
    with pytest.raises(ValueError, match="pattern is empty"):
        Mixture(pattern=()).check(DIMS, 100)
    with pytest.raises(ValueError, match="is itself a per-layer mixture"):
        Mixture(pattern=("rope", "rnope")).check(DIMS, 100)
    with pytest.raises(ValueError, match="nope_every must be >= 1"):
        RNoPE(nope_every=0).check(DIMS, 100)
    with pytest.raises(ValueError, match="rnope base must be > 0"):
        RNoPE(base=0.0).check(DIMS, 100)
    # A member's own constraint (rotary head dims must be even) reaches the mixture.
    with pytest.raises(ValueError, match="head_dim for rotary encodings must be even"):
        RNoPE().check(Dims(d_model=12, num_heads=4, head_dim=3), 100)
    # The mixture takes its members' positions: 2-D members need a 2-D sampler.
    with pytest.raises(ValueError, match="needs 2-D positions pos_BLA"):
        RunConfig(encoding=Mixture(pattern=("rope_nd",))).check()


# -- stick-breaking attention (ModelConfig.normalization) -----------------------------------------


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
