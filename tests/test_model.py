"""The transformer and its contract with every registered encoding."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pe_research import encodings
from pe_research import model as model_lib
from pe_research.config import ModelConfig, RunConfig
from pe_research.model import Transformer

CFG = ModelConfig(num_layers=2, d_model=32, num_heads=2, mlp_dim=64)
VOCAB = 12
B, L = 2, 10


def positions_for(enc, pos_BL):
    """n-D encodings take a trailing axis of coordinates; give them a diagonal walk."""
    if enc.position_axes is None:
        return pos_BL
    return jnp.repeat(pos_BL[..., None], enc.position_axes, axis=-1)


def build(enc, cfg=CFG, seed=0):
    return Transformer(cfg, enc, VOCAB, rngs=nnx.Rngs(seed))


def tokens(seed=0):
    return jax.random.randint(jax.random.key(seed), (B, L), 0, VOCAB)


def contiguous(length=L, start=0):
    return jnp.broadcast_to(jnp.arange(start, start + length, dtype=jnp.int32), (B, length))


@pytest.mark.parametrize("name", encodings.names())
def test_causality_for_every_encoding(name):
    """Perturbing token t leaves the logits at positions before t unchanged."""
    enc = encodings.get(name)
    model = build(enc)
    tok = tokens()
    pos = positions_for(enc, contiguous())
    t = 6
    perturbed = tok.at[:, t].set((tok[:, t] + 1) % VOCAB)
    before, after = model(tok, pos), model(perturbed, pos)
    assert before.shape == (B, L, VOCAB) and before.dtype == jnp.float32
    assert bool(jnp.isfinite(before).all())
    np.testing.assert_allclose(before[:, :t], after[:, :t], atol=1e-5)
    assert not np.allclose(before[:, t:], after[:, t:], atol=1e-5)


@pytest.mark.parametrize("name", encodings.names())
def test_jit_equals_eager(name):
    enc = encodings.get(name)
    graphdef, params = nnx.split(build(enc))
    tok, pos = tokens(), positions_for(enc, contiguous())

    def forward(params, tok, pos):
        return nnx.merge(graphdef, params)(tok, pos)

    np.testing.assert_allclose(
        jax.jit(forward)(params, tok, pos), forward(params, tok, pos), atol=1e-4, rtol=1e-4
    )


@pytest.mark.parametrize("name", ["nope", "rope", "alibi"])
def test_relative_encodings_ignore_a_common_shift(name):
    """For encodings that see only relative positions, shifting every position changes nothing."""
    model = build(encodings.get(name))
    tok = tokens()
    np.testing.assert_allclose(
        model(tok, contiguous()), model(tok, contiguous(start=37)), atol=2e-4, rtol=2e-4
    )


@pytest.mark.parametrize("name", ["sinusoidal", "learned"])
def test_absolute_encodings_see_the_shift(name):
    model = build(encodings.get(name, **({"init_std": 1.0} if name == "learned" else {})))
    tok = tokens()
    assert not np.allclose(model(tok, contiguous()), model(tok, contiguous(start=37)), atol=1e-3)


def test_nope_distinguishes_order_only_through_the_causal_mask():
    """Without positions and without a causal mask, self attention is permutation equivariant."""
    model = build(encodings.get("nope"), dataclasses.replace(CFG, causal=False))
    tok = tokens()
    perm = jnp.array([3, 1, 4, 0, 9, 2, 6, 5, 8, 7])
    out = model(tok, contiguous())
    out_perm = model(tok[:, perm], contiguous())
    np.testing.assert_allclose(out[:, perm], out_perm, atol=1e-5)


@pytest.mark.parametrize("causal", [True, False])
def test_padding_does_not_leak_into_real_positions(causal):
    """Changing padding tokens (valid=False) never changes the logits of real tokens."""
    model = build(encodings.get("rope"), dataclasses.replace(CFG, causal=causal))
    tok = tokens()
    valid = jnp.broadcast_to(jnp.arange(L) < 7, (B, L))
    pos = jnp.where(valid, contiguous(), 0)
    other = jnp.where(valid, tok, (tok + 5) % VOCAB)
    np.testing.assert_allclose(
        model(tok, pos, valid)[:, :7], model(other, pos, valid)[:, :7], atol=1e-5
    )


def test_bidirectional_model_sees_the_future():
    model = build(encodings.get("rope"), dataclasses.replace(CFG, causal=False))
    tok = tokens()
    perturbed = tok.at[:, 8].set((tok[:, 8] + 1) % VOCAB)
    assert not np.allclose(model(tok, contiguous())[:, 0], model(perturbed, contiguous())[:, 0])


def test_rope_scores_depend_only_on_relative_position():
    q = jax.random.normal(jax.random.key(1), (1, 6, 2, 8))
    k = jax.random.normal(jax.random.key(2), (1, 6, 2, 8))
    inv_freq, scale = encodings.rope_frequencies(8)
    for layout in ("half", "interleaved"):

        def scores(offset, layout=layout):
            pos = jnp.arange(6)[None] + offset
            qr = encodings.apply_rope(q, pos, inv_freq, layout=layout, attention_scale=scale)
            kr = encodings.apply_rope(k, pos, inv_freq, layout=layout, attention_scale=scale)
            return jnp.einsum("BLHK,BMHK->BHLM", qr, kr)

        np.testing.assert_allclose(scores(0), scores(1000), atol=1e-3)


def captured(model, tok, pos, valid):
    """Logits and each layer's sown attention probabilities, with capture on for this call only."""
    model.set_attributes(capture_attention=True)
    logits, sown = nnx.capture(model, nnx.Intermediate)(tok, pos, valid)
    model.set_attributes(capture_attention=False)
    sown = nnx.to_pure_dict(sown)
    return logits, [layer["attn"][model_lib.PROBS] for layer in sown["blocks"].values()]


@pytest.mark.parametrize("name", ["rope", "alibi", "t5"])
@pytest.mark.parametrize("causal", [True, False])
def test_sown_attention_is_the_softmax_of_the_attention_logits(name, causal):
    """One [B, H, L, L] map per layer; layer 0's is the softmax of q.k / sqrt(K) + bias from the
    module's own weights and hooks, zero at padding and (causal) future keys."""
    enc = encodings.get(name)
    model = build(enc, dataclasses.replace(CFG, causal=causal))
    tok, pos = tokens(), contiguous()
    valid = jnp.broadcast_to(jnp.arange(L) < 7, (B, L))
    future_LM = ~jnp.tril(jnp.ones((L, L), bool)) & causal
    allowed_BLM = valid[:, None, :] & ~future_LM[None]
    _, probs = captured(model, tok, pos, valid)
    assert len(probs) == CFG.num_layers
    for (probs_BHLM,) in probs:
        assert probs_BHLM.shape == (B, CFG.num_heads, L, L) and probs_BHLM.dtype == jnp.float32
        np.testing.assert_allclose(probs_BHLM.sum(-1), 1.0, rtol=1e-5)
        np.testing.assert_array_equal(np.where(allowed_BLM[:, None], 0.0, probs_BHLM), 0.0)

    attn = model.blocks[0].attn
    pe = {k: v[...] for k, v in attn.pe.items()}
    x_BLD = enc.embed({k: v[...] for k, v in model.pe.items()}, model.embed_VD[...][tok], pos)
    qkv_3BLHK = jnp.einsum(
        "BLD,DTHK->TBLHK", model.blocks[0].norm_attn(x_BLD), attn.w_qkv_D3HK[...]
    )
    q_BLHK, k_BMHK = enc.rotate(pe, qkv_3BLHK[0], qkv_3BLHK[1], pos, pos)
    scores_BHLM = jnp.einsum("BLHK,BMHK->BHLM", q_BLHK, k_BMHK) / np.sqrt(CFG.head_dim)
    scores_BHLM = scores_BHLM + enc.bias(pe, q_BLHK, k_BMHK, pos, pos)
    expected_BHLM = jax.nn.softmax(jnp.where(allowed_BLM[:, None], scores_BHLM, -jnp.inf), -1)
    np.testing.assert_allclose(probs[0][0], expected_BHLM, atol=1e-5)


@pytest.mark.parametrize("name", encodings.names())
def test_capturing_attention_leaves_the_logits_unchanged(name, monkeypatch):
    """Capture (one call) gives the logits of the chunked path (forced here with a tiny chunk
    size), and turning it off again records nothing."""
    monkeypatch.setattr(model_lib, "CPU_CHUNK_BYTES", 1)
    enc = encodings.get(name)
    model = build(enc)
    tok, pos = tokens(), positions_for(enc, contiguous())
    valid = jnp.ones((B, L), bool)
    logits, probs = captured(model, tok, pos, valid)
    np.testing.assert_allclose(logits, model(tok, pos, valid), atol=1e-5, rtol=1e-5)
    assert len(probs) == CFG.num_layers
    _, sown = nnx.capture(model, nnx.Intermediate)(tok, pos, valid)
    assert nnx.to_pure_dict(sown) == {}


def test_model_config_errors_name_the_constraint():
    with pytest.raises(ValueError, match="d_model=30 is not divisible by num_heads=4"):
        ModelConfig(d_model=30, num_heads=4).check()
    with pytest.raises(ValueError, match="num_layers must be >= 1"):
        ModelConfig(num_layers=0).check()
    with pytest.raises(ValueError, match="head_dim for rotary encodings must be even"):
        encodings.get("rope").check(ModelConfig(d_model=12, num_heads=4).dims(), 10)


def test_learned_table_is_never_read_out_of_range():
    enc = encodings.get("learned", max_positions=8)
    with pytest.raises(ValueError, match="max_positions=8 .* needs position 8"):
        enc.check(CFG.dims(), max_position=8)
    model = build(enc)
    tok = tokens()
    assert bool(jnp.isfinite(model(tok[:, :8], contiguous(8))).all())
    # Bypassing check: out-of-range rows read NaN, which poisons the output, instead of a silently
    # clamped row that would look like a plausible result.
    assert bool(jnp.isnan(model(tok, contiguous())).any())


def test_unknown_encoding_lists_known_ones():
    with pytest.raises(ValueError, match="Known encodings: .*rope"):
        encodings.get("rotary")
    with pytest.raises(ValueError, match="no hyper-parameter"):
        encodings.get("rope", bsae=10.0)


@pytest.mark.parametrize("name", encodings.names())
def test_encodings_are_hashable_and_round_trip(name):
    enc = encodings.get(name)
    assert hash(enc) == hash(encodings.get(name))
    assert encodings.from_dict(encodings.to_dict(enc)) == enc


@pytest.mark.parametrize(
    ("norm", "norm_position", "mlp", "qk_scale", "mlp_bias", "tie"),
    [("layernorm", "pre", "gelu", "logits", True, False),
     ("rmsnorm", "pre", "gelu", "logits", True, False),
     ("layernorm", "pre", "geglu", "logits", True, False),
     ("rmsnorm", "pre_post", "geglu", "logits", True, False),
     ("layernorm", "pre_post", "gelu", "logits", True, False),
     ("layernorm", "post", "relu", "logits", True, False),
     ("rmsnorm", "pre", "relu", "init", False, False),  # T5's block
     ("rmsnorm", "pre", "relu", "init", False, True)],  # T5's block and tied head
)  # fmt: skip
def test_block_options_against_a_float64_forward_pass(
    norm, norm_position, mlp, qk_scale, mlp_bias, tie
):
    """The whole model (NoPE, causal) recomputed in numpy float64 from its own weights, for each
    block the options make: RMSNorm or LayerNorm; pre, pre+post (a PostNorm after each residual
    add) or post norm; GELU, ReLU or GeGLU; and T5's block (unscaled q.k, no MLP biases), with
    its own head or T5's tied one (the embeddings, after scaling the stream by d_model^-0.5)."""
    cfg = dataclasses.replace(
        CFG, norm=norm, norm_position=norm_position, mlp=mlp, qk_scale=qk_scale,
        mlp_bias=mlp_bias, tie_embeddings=tie,
    )  # fmt: skip
    cfg.check()
    model = build(encodings.get("nope"), cfg)
    # Non-trivial norm scales and biases, so that a layer read in the wrong place shows.
    for i, (path, leaf) in enumerate(nnx.to_flat_state(nnx.state(model, nnx.Param))):
        if path[-1] in ("scale", "bias"):
            leaf.set_value(leaf[...] + 0.1 * jax.random.normal(jax.random.key(i), leaf.shape))
    params = nnx.to_pure_dict(nnx.state(model, nnx.Param))
    f64 = jax.tree.map(lambda x: np.asarray(x, np.float64), params)
    tok = tokens()

    def normalize(p, x):
        if norm == "rmsnorm":
            return x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-6) * p["scale"]
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-6) * p["scale"] + p["bias"]

    def gelu(x):  # jax.nn.gelu's default tanh form
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))

    activation = (lambda x: np.maximum(x, 0.0)) if mlp == "relu" else gelu
    pre = (lambda p, x: normalize(p, x)) if norm_position != "post" else (lambda p, x: x)

    x = f64["embed_VD"][np.asarray(tok)]
    causal = np.tril(np.ones((L, L), bool))
    for block in f64["blocks"].values():
        attn = block["attn"]
        qkv = np.einsum("bld,dthk->tblhk", pre(block["norm_attn"], x), attn["w_qkv_D3HK"])
        scores = np.einsum("blhk,bmhk->bhlm", qkv[0], qkv[1])
        scores = scores / np.sqrt(cfg.head_dim) if qk_scale == "logits" else scores
        scores = np.where(causal, scores, -np.inf)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        out = np.einsum("bhlm,bmhk,hkd->bld", probs, qkv[2], attn["w_out_HKD"])
        x = x + out
        if norm_position == "pre_post":
            x = normalize(block["post_attn"], x)
        if norm_position == "post":
            x = normalize(block["norm_attn"], x)
        m, h = block["mlp"], pre(block["norm_mlp"], x)
        up = h @ m["w_in_DF"] + m.get("b_in_F", 0.0)
        hidden = gelu(h @ m["w_gate_DF"]) * up if mlp == "geglu" else activation(up)
        out = hidden @ m["w_out_FD"] + m.get("b_out_D", 0.0)
        x = x + out
        if norm_position == "pre_post":
            x = normalize(block["post_mlp"], x)
        if norm_position == "post":
            x = normalize(block["norm_mlp"], x)
    if norm_position != "post":
        x = normalize(f64["norm_out"], x)
    assert ("norm_out" in f64) == (norm_position != "post")
    assert ("w_head_DV" in f64) != tie
    want = (x * cfg.d_model**-0.5) @ f64["embed_VD"].T if tie else x @ f64["w_head_DV"]
    got = np.asarray(model(tok, contiguous()), np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
    assert ("post_attn" in f64["blocks"][0]) == (norm_position == "pre_post")
    assert ("w_gate_DF" in f64["blocks"][0]["mlp"]) == (mlp == "geglu")
    assert ("b_in_F" in f64["blocks"][0]["mlp"]) == mlp_bias


def test_qk_scale_init_moves_the_scaling_into_w_q_and_leaves_the_first_logits_alone():
    """T5's form: W_q drawn 1/sqrt(head_dim) smaller and q.k left unscaled computes the same
    function at initialisation as the scaled logits (every other weight drawn the same)."""
    scaled, t5_form = (
        build(encodings.get("alibi"), dataclasses.replace(CFG, qk_scale=form))
        for form in ("logits", "init")
    )
    w_D3HK, w_init_D3HK = (m.blocks[0].attn.w_qkv_D3HK[...] for m in (scaled, t5_form))
    np.testing.assert_allclose(w_init_D3HK[:, 0], w_D3HK[:, 0] * CFG.head_dim**-0.5, rtol=1e-6)
    np.testing.assert_array_equal(w_init_D3HK[:, 1:], w_D3HK[:, 1:])
    tok = tokens()
    np.testing.assert_allclose(
        t5_form(tok, contiguous()), scaled(tok, contiguous()), rtol=1e-4, atol=1e-4
    )
    with pytest.raises(ValueError, match="model qk_scale 'none' is not supported.*logits, init"):
        ModelConfig(qk_scale="none").check()


@pytest.mark.parametrize("name", ["cope", "dape", "pope", "path", "transformer_xl"])
def test_encodings_that_scale_their_own_q_k_refuse_unscaled_logits(name):
    """Their hooks compute q.k / sqrt(head_dim) themselves; under qk_scale 'init' that would not
    match the model's unscaled q.k, so they say so before training."""
    with pytest.raises(ValueError, match=rf"{name} computes its own q.k.*qk_scale 'logits'"):
        build(encodings.get(name), dataclasses.replace(CFG, qk_scale="init"))
    build(encodings.get(name), CFG)


def test_t5_refuses_to_unscale_logits_the_model_leaves_unscaled():
    cfg = dataclasses.replace(CFG, qk_scale="init")
    with pytest.raises(ValueError, match="t5 scaled=False.*qk_scale 'init'.*scaled=True"):
        build(encodings.get("t5", scaled=False), cfg)
    build(encodings.get("t5", shared=True), cfg)  # the paper's T5 in that form


def test_embed_std_scales_the_token_embeddings_and_nothing_else():
    plain = build(encodings.get("sinusoidal"))
    small = build(encodings.get("sinusoidal"), dataclasses.replace(CFG, embed_std=0.16))
    np.testing.assert_allclose(small.embed_VD[...], 0.16 * plain.embed_VD[...], rtol=1e-6)
    np.testing.assert_array_equal(small.w_head_DV[...], plain.w_head_DV[...])
    with pytest.raises(ValueError, match="embed_std must be > 0"):
        ModelConfig(embed_std=0.0).check()


def test_block_options_refuse_unknown_values():
    with pytest.raises(ValueError, match="model norm 'batchnorm' is not supported.*rmsnorm"):
        ModelConfig(norm="batchnorm").check()
    with pytest.raises(ValueError, match="model mlp 'swiglu' is not supported.*geglu"):
        ModelConfig(mlp="swiglu").check()


def test_dropout_zeroes_the_rate_and_keeps_the_expectation():
    x = jnp.ones((200_000,))
    y = np.asarray(model_lib.dropout(x, 0.3, jax.random.key(0)))
    assert abs((y == 0).mean() - 0.3) < 0.005
    np.testing.assert_allclose(y[y != 0], 1 / 0.7, rtol=1e-6)
    assert (
        model_lib.dropout(x, 0.3, None) is x and model_lib.dropout(x, 0.0, jax.random.key(0)) is x
    )


@pytest.mark.parametrize("sites", ["residual", "t5"])
def test_dropout_sites(monkeypatch, sites):
    """Where each style drops, read from the calls the model makes: residual (Vaswani et al.,
    Ruoss et al.'s code) the input stream and every sublayer output; t5 also the attention
    weights (per sequence), the MLP's hidden units and the last norm's output."""
    cfg = dataclasses.replace(CFG, dropout=0.2, dropout_sites=sites)
    model = build(encodings.get("rope"), cfg)
    calls = []
    real = model_lib.dropout

    def spy(x, rate, key):
        if key is not None and rate:
            calls.append(x.shape)
        return real(x, rate, key)

    monkeypatch.setattr(model_lib, "dropout", spy)
    tok = tokens()
    model(tok, contiguous(), dropout_key=jax.random.key(1))
    N, D, F, H = tok.size, cfg.d_model, cfg.mlp_dim, cfg.num_heads
    n = cfg.num_layers
    want = [(N, D)] * (1 + 2 * n)
    if sites == "t5":
        want += [(H, L, L)] * n + [(N, F)] * n + [(N, D)]
    assert sorted(calls) == sorted(want)


def test_dropout_acts_in_training_only():
    """No key (evaluation) computes the model without dropout; a key drops, the same units for
    the same key; a model at rate 0 ignores the key."""
    plain = build(encodings.get("rope"))
    drop = build(encodings.get("rope"), dataclasses.replace(CFG, dropout=0.3, dropout_sites="t5"))
    tok, pos = tokens(), contiguous()
    np.testing.assert_array_equal(drop(tok, pos), plain(tok, pos))  # the same weights
    key = jax.random.key(7)
    np.testing.assert_array_equal(drop(tok, pos, dropout_key=key), drop(tok, pos, dropout_key=key))
    assert not np.allclose(drop(tok, pos, dropout_key=key), plain(tok, pos), atol=1e-3)
    np.testing.assert_array_equal(plain(tok, pos, dropout_key=key), plain(tok, pos))
    with pytest.raises(ValueError, match="dropout must be in"):
        ModelConfig(dropout=1.0).check()
    with pytest.raises(ValueError, match="cannot drop attention weights"):
        ModelConfig(dropout=0.1, dropout_sites="t5", attention="dot_product").check()
    with pytest.raises(ValueError, match=r"seed -1 with model dropout.*\[0, 2\^32\)"):
        RunConfig(model=ModelConfig(dropout=0.1), seed=-1).check()
    RunConfig(model=ModelConfig(dropout=0.1), seed=2**32 - 1).check()
