"""Properties of the attention-bias encodings: ALiBi, T5, Kerple, FIRE, Transformer-XL."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pe_research import encodings
from pe_research.config import ModelConfig
from pe_research.encodings.base import Dims
from pe_research.encodings.bias import ALiBi, Kerple, T5Bias, alibi_slopes, t5_relative_bucket
from pe_research.encodings.learned_bias import FIRE, TransformerXL, fire_normalized_distance
from pe_research.model import KEYS, PROBS, QUERIES, Transformer

DIMS = Dims(d_model=32, num_heads=2, head_dim=16, causal=True)
ENCODINGS = [
    ALiBi(),
    T5Bias(),
    Kerple(variant="log"),
    Kerple(variant="power"),
    # A small threshold so that the progressive normalization is active at test lengths.
    FIRE(init_threshold=4.0),
    TransformerXL(),
]
IDS = [f"{e.name}-{getattr(e, 'variant', '')}" for e in ENCODINGS]

# One quick compilation per encoding and shape instead of one per operation: keeps the file fast.
FAST = {"xla_backend_optimization_level": 0}
_bias = jax.jit(lambda enc, *args: enc.bias(*args), static_argnums=0, compiler_options=FAST)


def _qk(seed, B=2, L=6, M=6, dims=DIMS, dtype=jnp.float32):
    # NumPy draws: eager jax.random compiles anew for every shape, which dominated the runtime.
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, L, dims.num_heads, dims.head_dim), np.float32)
    k = rng.standard_normal((B, M, dims.num_heads, dims.head_dim), np.float32)
    return jnp.asarray(q, dtype), jnp.asarray(k, dtype)


def _init(enc, dims=DIMS):
    return _init_jit(enc, dims, jax.random.key(0))


_init_jit = jax.jit(
    lambda enc, dims, key: enc.init_layer(key, dims), static_argnums=(0, 1), compiler_options=FAST
)


# -- ALiBi ----------------------------------------------------------------------------------------


def test_alibi_slopes_powers_of_two():
    np.testing.assert_allclose(alibi_slopes(8), [2.0**-i for i in range(1, 9)], rtol=1e-6)
    np.testing.assert_allclose(alibi_slopes(4), [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8], rtol=1e-6)


def test_alibi_slopes_six_heads():
    # The 4 slopes of 4 heads, then slopes 1, 3 (0-based 0, 2) of 8 heads: 1/2 and 1/8.
    expected = [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8]
    np.testing.assert_allclose(alibi_slopes(6), expected, rtol=1e-6)


def test_alibi_bias_values():
    pos = jnp.arange(4)[None]
    bias = _bias(ALiBi(), {}, *_qk(0, B=1, L=4, M=4), pos, pos)
    assert bias.shape == (1, 2, 4, 4)
    # Two heads: slopes 2^-4 and 2^-8.
    np.testing.assert_allclose(bias[0, 0, 3, 0], -3 / 16, rtol=1e-6)
    np.testing.assert_allclose(bias[0, 1, 1, 3], -2 / 256, rtol=1e-6)


# -- T5 -------------------------------------------------------------------------------------------

# Derived by hand from bucket = E + floor(log(n / E) / log(max_distance / E) * (N' - E)), with N'
# the buckets of one direction and E = N' / 2 exact buckets; n = distance.
# Unidirectional, N' = 32, E = 16, log(128/16) = log 8: n=20 -> 16 + floor(1.72) = 17;
# n=32 -> 16 + floor(16/3) = 21; n=64 -> 16 + floor(32/3) = 26; n=100 -> 16 + floor(14.10) = 30;
# n=127 -> 16 + floor(15.94) = 31; n>=128 -> last bucket 31. Future keys share bucket 0.
UNIDIRECTIONAL = {
    0: 0,
    3: 0,
    100: 0,
    -1: 1,
    -15: 15,
    -16: 16,
    -20: 17,
    -32: 21,
    -64: 26,
    -100: 30,
    -127: 31,
    -128: 31,
    -1000: 31,
}
# Bidirectional, N' = 16, E = 8, log(128/8) = log 16, future keys offset by 16:
# n=12 -> 8 + floor(1.17) = 9; n=20 -> 8 + floor(2.64) = 10; n=50 -> 8 + floor(5.29) = 13;
# n=127 -> 8 + floor(7.98) = 15; n >= 128 -> 15.
BIDIRECTIONAL = {
    0: 0,
    -3: 3,
    3: 19,
    -7: 7,
    7: 23,
    -8: 8,
    -12: 9,
    -20: 10,
    20: 26,
    -50: 13,
    50: 29,
    -127: 15,
    -200: 15,
    200: 31,
}


@pytest.mark.parametrize("bidirectional, golden", [(False, UNIDIRECTIONAL), (True, BIDIRECTIONAL)])
def test_t5_bucket_golden(bidirectional, golden):
    rel = jnp.asarray(list(golden), jnp.int32)
    got = t5_relative_bucket(rel, bidirectional=bidirectional, num_buckets=32, max_distance=128)
    assert got.dtype == jnp.int32
    assert dict(zip(golden, got.tolist(), strict=True)) == golden


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("num_buckets, max_distance", [(32, 128), (9, 20)])
def test_t5_bucket_monotone_and_in_range(bidirectional, num_buckets, max_distance):
    n = jnp.arange(0, 512)  # one shape for every case, so eager operations compile once
    past = t5_relative_bucket(
        -n, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    assert bool(jnp.all(jnp.diff(past) >= 0)), "buckets must not decrease with distance"
    assert bool(jnp.all((past >= 0) & (past < num_buckets)))
    last = (num_buckets // 2 if bidirectional else num_buckets) - 1
    assert bool(jnp.all(past[max_distance:] == last)), "beyond max_distance: the last bucket"
    future = t5_relative_bucket(
        n, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    assert bool(jnp.all((future >= 0) & (future < num_buckets)))
    if bidirectional:
        assert bool(jnp.all(jnp.diff(future[1:]) >= 0))
        assert bool(jnp.all(future[1:] >= num_buckets // 2))
    else:
        assert bool(jnp.all(future == 0))


def test_t5_bucket_rejects_impossible_sizes():
    with pytest.raises(ValueError, match="num_buckets"):
        t5_relative_bucket(jnp.zeros(3, jnp.int32), bidirectional=True, num_buckets=2)
    with pytest.raises(ValueError, match="max_distance"):
        T5Bias(num_buckets=32, max_distance=16).check(DIMS, 100)


def test_t5_table_follows_causality():
    causal = _init(T5Bias())
    bidir = _init(T5Bias(), Dims(32, 2, 16, causal=False))
    pos = jnp.arange(6)[None]
    q, k = _qk(1, B=1)
    b_causal = _bias(T5Bias(), causal, q, k, pos, pos)
    b_bidir = _bias(T5Bias(), bidir, q, k, pos, pos)
    assert list(causal) == ["table_NH"] and list(bidir) == ["bidirectional_table_NH"]
    assert causal["table_NH"].shape == (32, 2)
    # A key one step ahead is bucket 0 in the unidirectional scheme and 17 in the bidirectional
    # one; three steps back is bucket 3 in both.
    table, bidir_table = causal["table_NH"], bidir["bidirectional_table_NH"]
    np.testing.assert_allclose(b_causal[0, :, 2, 3], table[0])
    np.testing.assert_allclose(b_causal[0, :, 4, 1], table[3])
    np.testing.assert_allclose(b_bidir[0, :, 2, 3], bidir_table[17])
    np.testing.assert_allclose(b_bidir[0, :, 4, 1], bidir_table[3])


# -- every bias: translation invariance ------------------------------------------------------------

TEST_POS = jnp.asarray([[0, 1, 2, 5, 6, 9], [3, 4, 5, 6, 7, 8]])


INVARIANT = [e for e in ENCODINGS if not isinstance(e, FIRE)]


@pytest.mark.parametrize("enc", INVARIANT, ids=[i for i in IDS if not i.startswith("fire")])
def test_translation_invariant(enc):
    params = _init(enc)
    q, k = _qk(1)
    pos = TEST_POS
    before = _bias(enc, params, q, k, pos, pos)
    after = _bias(enc, params, q, k, pos + 37, pos + 37)
    assert before.dtype == jnp.float32
    assert float(jnp.max(jnp.abs(before))) > 0, "a zero bias makes this test vacuous"
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def test_fire_translation_invariant_below_threshold():
    enc = FIRE()  # threshold 512
    params = _init(enc)
    q, k = _qk(1)
    pos = TEST_POS
    before = _bias(enc, params, q, k, pos, pos)
    np.testing.assert_allclose(_bias(enc, params, q, k, pos + 400, pos + 400), before, rtol=1e-5)


# -- Kerple ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["log", "power"])
def test_kerple_coefficients_stay_positive(variant):
    enc = Kerple(variant=variant)
    init = _init(enc, Dims(32, 8, 4))
    for raw in (init, {"r1_raw_H": jnp.full(3, -1e4), "r2_raw_H": jnp.full(3, -1e4)}):
        r1, r2 = enc.coefficients(raw)
        assert bool(jnp.all(r1 > 0) & jnp.all(r2 > 0)), (r1, r2)
    _, r2 = enc.coefficients({"r1_raw_H": jnp.zeros(3), "r2_raw_H": jnp.full(3, 1e4)})
    if variant == "power":
        assert bool(jnp.all(r2 <= 2.0))
    # The paper's initial ranges: r1 in (0, 2) for log, (0, 1) for power.
    r1, r2 = enc.coefficients(init)
    top1, top2 = (2.0, 1.0) if variant == "log" else (1.0, 2.0)
    assert bool(jnp.all(r1 < top1) & jnp.all(r2 < top2))


def test_kerple_variants_and_formula():
    params = {"r1_raw_H": jnp.zeros(2), "r2_raw_H": jnp.zeros(2)}
    pos = jnp.arange(5)[None]
    q, k = _qk(0, B=1, L=5, M=5)
    log_bias = _bias(Kerple(variant="log"), params, q, k, pos, pos)
    power_bias = _bias(Kerple(variant="power"), params, q, k, pos, pos)
    r1, r2 = Kerple(variant="log").coefficients(params)
    np.testing.assert_allclose(log_bias[0, :, 4, 1], -r1 * np.log1p(r2 * 3), rtol=1e-6)
    r1, r2 = Kerple(variant="power").coefficients(params)
    np.testing.assert_allclose(power_bias[0, :, 4, 1], -r1 * 3.0**r2, rtol=1e-6)
    assert not np.allclose(log_bias, power_bias)
    np.testing.assert_array_equal(power_bias[0, :, 2, 2], 0.0)


def test_kerple_power_gradient_finite_at_distance_zero():
    enc = Kerple(variant="power")
    params = _init(enc)
    q, k = _qk(1)
    grads = jax.jit(jax.grad(lambda p: jnp.sum(enc.bias(p, q, k, TEST_POS, TEST_POS))))(params)
    assert all(bool(jnp.all(jnp.isfinite(g))) for g in grads.values())


# -- FIRE -----------------------------------------------------------------------------------------


def test_fire_shape_and_causal_normalization():
    enc = FIRE(init_threshold=4.0)
    params = _init(enc)
    q, k = _qk(1, L=12, M=12)
    pos = jnp.arange(12)[None].repeat(2, 0)
    bias = _bias(enc, params, q, k, pos, pos)
    assert bias.shape == (2, DIMS.num_heads, 12, 12) and bias.dtype == jnp.float32
    # The bias of (i, j) uses positions i and j only: moving later positions changes nothing in
    # the block before them (no normalization by the longest position or the length).
    moved = pos.at[:, 5:].add(100)
    np.testing.assert_allclose(
        _bias(enc, params, q, k, moved, moved)[:, :, :5, :5], bias[:, :, :5, :5], rtol=1e-6
    )
    # The query position, not the key position, sets the normalizer.
    assert not np.allclose(bias[:, :, 8, 2], bias[:, :, 2, 8])

    x = jax.jit(fire_normalized_distance)(pos, pos, c=0.1, threshold=4.0)
    i, j = np.arange(12)[:, None], np.arange(12)[None, :]
    expected = np.log1p(0.1 * np.abs(i - j)) / (np.log1p(0.1 * np.maximum(4, i)) + 1e-6)
    np.testing.assert_allclose(x[0], expected, rtol=1e-5)
    causal_part = np.tril(x[0])
    assert bool(np.all((causal_part >= 0) & (causal_part <= 1)))


# -- Transformer-XL -------------------------------------------------------------------------------


def test_transformer_xl_matches_direct_computation():
    enc = TransformerXL()
    params = {name: np.asarray(value, np.float64) for name, value in _init(enc).items()}
    q, k = _qk(1)
    pos = TEST_POS + 11
    got = _bias(enc, _init(enc), q, k, pos, pos)
    # R_o = [sin(o w), cos(o w)] for every pair's offset o = i - j, computed directly.
    w_F = 10000.0 ** (-np.arange(0, DIMS.d_model, 2) / DIMS.d_model)
    o_BLM = np.asarray(pos)[:, :, None] - np.asarray(pos)[:, None, :]
    angle_BLMF = o_BLM[..., None] * w_F
    r_BLMR = np.concatenate([np.sin(angle_BLMF), np.cos(angle_BLMF)], axis=-1)
    proj_BLMHK = np.einsum("BLMR,RHK->BLMHK", r_BLMR, params["w_RHK"])
    qv_BLHK = np.asarray(q, np.float64) + params["v_HK"][None, None]
    expected = np.einsum("BLHK,BLMHK->BHLM", qv_BLHK, proj_BLMHK)
    content_BHM = np.einsum("HK,BMHK->BHM", params["u_HK"], np.asarray(k, np.float64))
    expected = (expected + content_BHM[:, :, None, :]) / math.sqrt(DIMS.head_dim)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


# -- inside the model -----------------------------------------------------------------------------


def _model(enc, causal=True):
    cfg = ModelConfig(num_layers=1, d_model=32, num_heads=2, mlp_dim=64, causal=causal)
    return Transformer(cfg, enc, vocab_size=20, rngs=nnx.Rngs(0))


TOKENS = jnp.asarray(np.random.default_rng(7).integers(0, 20, (2, 8)), jnp.int32)
POS = jnp.arange(8)[None].repeat(2, 0)


# Kerple's power variant differs from the log one only inside its hook, tested above.
@pytest.mark.parametrize("enc", ENCODINGS[:3] + ENCODINGS[4:], ids=IDS[:3] + IDS[4:])
def test_model_causal_and_bf16(enc):
    model = _model(enc)
    t = 5
    # Rows 0-1 as given, rows 2-3 with token t changed: one call, one compilation.
    tokens = jnp.concatenate([TOKENS, TOKENS.at[:, t].set((TOKENS[:, t] + 1) % 20)])
    pos = jnp.concatenate([POS, POS])
    graphdef, state = nnx.split(model)
    bf16 = jax.tree.map(lambda a: a.astype(jnp.bfloat16), state)

    @functools.partial(jax.jit, compiler_options=FAST)
    def forward(state, bf16):
        return nnx.merge(graphdef, state)(tokens, pos), nnx.merge(graphdef, bf16)(tokens, pos)

    logits, logits_bf16 = forward(state, bf16)
    np.testing.assert_allclose(logits[2:, :t], logits[:2, :t], rtol=1e-5, atol=1e-5)
    assert not np.allclose(logits[2:, t:], logits[:2, t:])
    assert logits_bf16.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(logits_bf16)))


@pytest.mark.parametrize("enc", ENCODINGS, ids=IDS)
def test_bias_jit_equals_eager(enc):
    # The model runs every hook under jit; the same shapes as above reuse the compiled bias.
    params = _init(enc)
    q, k = _qk(1)
    pos = TEST_POS + 3
    eager = enc.bias(params, q, k, pos, pos)
    np.testing.assert_allclose(_bias(enc, params, q, k, pos, pos), eager, rtol=1e-5, atol=1e-6)


def test_bias_hook_bf16_inputs_give_float32():
    for enc in ENCODINGS:
        params = jax.tree.map(lambda a: a.astype(jnp.bfloat16), _init(enc))
        q, k = _qk(1, dtype=jnp.bfloat16)
        bias = _bias(enc, params, q, k, POS[:, :6], POS[:, :6])
        assert bias.dtype == jnp.float32, enc.name
        assert bool(jnp.all(jnp.isfinite(bias))), enc.name


@pytest.mark.parametrize("scaled", [True, False])
def test_t5_bias_adds_to_scaled_or_unscaled_logits(scaled):
    """Attention probabilities against float64 numpy: softmax(q.k [/ sqrt(K)] + table[bucket])
    over earlier keys, from the q and k the model records before its hooks."""
    cfg = ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32)
    enc = encodings.get("t5", shared=True, scaled=scaled, num_buckets=8, max_distance=16)
    model = Transformer(cfg, enc, 10, rngs=nnx.Rngs(0))
    model.set_attributes(capture_attention=True)
    L = 24
    tokens = jax.random.randint(jax.random.key(1), (1, L), 0, 10)
    pos = jnp.arange(L)[None]
    _, sown = nnx.capture(model, nnx.Intermediate)(tokens, pos, jnp.ones((1, L), bool))
    sown = nnx.to_pure_dict(sown)["blocks"][0]["attn"]
    probs, q, k = (np.asarray(sown[n][0], np.float64) for n in (PROBS, QUERIES, KEYS))
    table = np.asarray(model.pe["table_NH"][...], np.float64)
    rel = np.arange(L)[None, :] - np.arange(L)[:, None]  # key - query
    bucket = np.asarray(
        t5_relative_bucket(rel, bidirectional=False, num_buckets=8, max_distance=16)
    )
    dot = np.einsum("lhk,mhk->hlm", q[0], k[0])
    want = dot / (np.sqrt(q.shape[-1]) if scaled else 1.0) + table[bucket].transpose(2, 0, 1)
    want = np.where(np.tril(np.ones((L, L), bool))[None], want, -np.inf)
    want = np.exp(want - want.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    np.testing.assert_allclose(probs[0], want, atol=2e-5)
