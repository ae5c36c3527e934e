"""Properties of the rotary family: RoPE (layouts, p, fraction, scalings), n-D RoPE, xPos."""

import dataclasses
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rotary_inputs
from rotary_inputs import B, H, L, arange_pos, scores

from pe_research.encodings.base import Dims
from pe_research.encodings.rotary import (
    RoPE,
    RoPEND,
    RopeScaling,
    XPos,
    apply_rope,
    rope_frequencies,
)

K = 8


def qk(seed=0, k_dim=K, length=L):
    return rotary_inputs.qk(seed, k_dim, length)


# -- RoPE -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(
    "scaling", [None, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8}]
)
def test_rope_scores_invariant_to_common_shift(layout, scaling):
    enc = RoPE(layout=layout, scaling=scaling)
    q, k = qk()
    ref = scores(enc, q, k, arange_pos(), arange_pos())
    shifted = scores(enc, q, k, arange_pos(37), arange_pos(37))
    np.testing.assert_allclose(shifted, ref, atol=1e-4)
    # Not vacuous: a shift of the keys alone changes the scores.
    assert not np.allclose(scores(enc, q, k, arange_pos(), arange_pos(3)), ref, atol=1e-2)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_preserves_norms(layout):
    q, _ = qk()
    out = apply_rope(q, arange_pos(11), rope_frequencies(K)[0], layout=layout)
    np.testing.assert_allclose(
        jnp.linalg.norm(out, axis=-1), jnp.linalg.norm(q, axis=-1), rtol=1e-5
    )
    assert not np.allclose(out, q, atol=1e-3)


def test_layouts_agree_up_to_a_fixed_permutation():
    J = K // 2
    # Interleaved slot 2j holds the half-layout component j, slot 2j+1 holds component j + J.
    perm_K = np.array([i // 2 if i % 2 == 0 else J + i // 2 for i in range(K)])
    assert sorted(perm_K) == list(range(K))
    q, _ = qk()
    inv_freq_J, _ = rope_frequencies(K)
    half = apply_rope(q, arange_pos(5), inv_freq_J, layout="half")
    inter = apply_rope(q[..., perm_K], arange_pos(5), inv_freq_J, layout="interleaved")
    np.testing.assert_allclose(inter, half[..., perm_K], atol=1e-6)
    assert not np.allclose(apply_rope(q, arange_pos(5), inv_freq_J, layout="interleaved"), half)


def test_p_rope_endpoints_and_middle():
    q, k = qk()
    pos = arange_pos(9)
    nope_q, nope_k = RoPE(p=0.0).rotate({}, q, k, pos, pos)
    np.testing.assert_array_equal(nope_q, q)
    np.testing.assert_array_equal(nope_k, k)
    full = RoPE(p=1.0).rotate({}, q, k, pos, pos)
    plain = RoPE().rotate({}, q, k, pos, pos)
    np.testing.assert_array_equal(full[0], plain[0])
    inv_freq_J, _ = rope_frequencies(K, p=0.5)
    np.testing.assert_allclose(inv_freq_J, [1.0, 0.1, 0.0, 0.0], rtol=1e-6)


def test_fraction_leaves_the_rest_unchanged():
    q, _ = qk()
    enc = RoPE(fraction=0.5)
    out, _ = enc.rotate({}, q, q, arange_pos(3), arange_pos(3))
    np.testing.assert_array_equal(out[..., K // 2 :], q[..., K // 2 :])
    # The rotated part is a full RoPE of the first K/2 components.
    sub = apply_rope(q[..., : K // 2], arange_pos(3), rope_frequencies(K // 2)[0])
    np.testing.assert_allclose(out[..., : K // 2], sub, atol=1e-6)


def test_golden_values_head_dim_4_base_100_position_1():
    inv_freq_J, scale = rope_frequencies(4, base=100.0)
    np.testing.assert_allclose(inv_freq_J, [1.0, 0.1], rtol=1e-6)  # 100^0, 100^(-2/4)
    assert scale == 1.0
    c1, s1 = 0.5403023058681398, 0.8414709848078965  # cos 1, sin 1
    c2, s2 = 0.9950041652780258, 0.09983341664682815  # cos 0.1, sin 0.1
    x = jnp.array([1.0, 2.0, 3.0, 4.0])[None, None, None]
    pos = jnp.array([[1]])
    # half: pairs (0, 2) at angle 1 and (1, 3) at angle 0.1.
    half = [1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 3 * c1 + 1 * s1, 4 * c2 + 2 * s2]
    # interleaved: pairs (0, 1) at angle 1 and (2, 3) at angle 0.1.
    inter = [1 * c1 - 2 * s1, 2 * c1 + 1 * s1, 3 * c2 - 4 * s2, 4 * c2 + 3 * s2]
    np.testing.assert_allclose(apply_rope(x, pos, inv_freq_J)[0, 0, 0], half, atol=1e-6)
    out = apply_rope(x, pos, inv_freq_J, layout="interleaved")
    np.testing.assert_allclose(out[0, 0, 0], inter, atol=1e-6)


# -- scalings -------------------------------------------------------------------------------------

ORIG = 16
SCALINGS_AT_1 = [
    {"rope_type": "linear", "factor": 1.0},
    {"rope_type": "ntk", "factor": 1.0},
    {"rope_type": "dynamic", "factor": 1.0, "original_max_position_embeddings": ORIG},
    {"rope_type": "yarn", "factor": 1.0, "original_max_position_embeddings": ORIG},
    {
        "rope_type": "llama3",
        "factor": 1.0,
        "original_max_position_embeddings": ORIG,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
    },
]


@pytest.mark.parametrize("scaling", SCALINGS_AT_1, ids=lambda s: s["rope_type"])
def test_scalings_reduce_to_rope_at_factor_1(scaling):
    plain, _ = rope_frequencies(16)
    got, scale = rope_frequencies(16, scaling=scaling, seq_len=ORIG)
    np.testing.assert_allclose(got, plain, rtol=1e-5)
    assert scale == 1.0
    # ...and each of them does change the frequencies at factor 4.
    if scaling["rope_type"] != "dynamic":
        moved, _ = rope_frequencies(16, scaling={**scaling, "factor": 4.0})
        assert not np.allclose(moved, plain, rtol=1e-3)


def test_linear_factor_4_is_rope_at_quarter_positions():
    q, _ = qk()
    pos = arange_pos(2).astype(jnp.float32)
    inv_lin, _ = rope_frequencies(K, scaling={"rope_type": "linear", "factor": 4.0})
    np.testing.assert_allclose(
        apply_rope(q, pos, inv_lin), apply_rope(q, pos / 4, rope_frequencies(K)[0]), atol=1e-6
    )


def test_ntk_rescales_the_base():
    got, _ = rope_frequencies(8, scaling={"rope_type": "ntk", "factor": 4.0})
    want, _ = rope_frequencies(8, base=10000.0 * 4.0 ** (8 / 6))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_dynamic_changes_only_beyond_the_original_length():
    s = {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": ORIG}
    plain, _ = rope_frequencies(K)
    for n in (1, ORIG // 2, ORIG):
        np.testing.assert_allclose(rope_frequencies(K, scaling=s, seq_len=n)[0], plain, rtol=1e-6)
    np.testing.assert_allclose(rope_frequencies(K, scaling=s)[0], plain, rtol=1e-6)
    long_J, _ = rope_frequencies(K, scaling=s, seq_len=4 * ORIG)
    # base *= (2 * 4 - 1) ** (8 / 6): the top frequency stays 1, the others fall.
    want, _ = rope_frequencies(K, base=10000.0 * 7.0 ** (8 / 6))
    np.testing.assert_allclose(long_J, want, rtol=1e-5)
    assert long_J[0] == 1.0 and np.all(long_J[1:] < plain[1:])
    # The length may be traced.
    traced = jax.jit(lambda n: rope_frequencies(K, scaling=s, seq_len=n)[0])
    np.testing.assert_allclose(traced(4 * ORIG), long_J, rtol=1e-6)
    np.testing.assert_allclose(traced(ORIG), plain, rtol=1e-6)


def test_rope_dynamic_reads_the_largest_key_position():
    s = {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4}
    q, k = qk()
    enc = RoPE(scaling=s)
    pos = arange_pos(10)  # largest position 15: seq_len 16
    inv_freq_J, _ = rope_frequencies(K, scaling=s, seq_len=16)
    got_q, got_k = enc.rotate({}, q, k, pos, pos)
    np.testing.assert_allclose(got_q, apply_rope(q, pos, inv_freq_J), atol=1e-6)
    np.testing.assert_allclose(got_k, apply_rope(k, pos, inv_freq_J), atol=1e-6)
    short = arange_pos(0, length=4)
    np.testing.assert_array_equal(
        enc.rotate({}, q[:, :4], k[:, :4], short, short)[0],
        RoPE().rotate({}, q[:, :4], k[:, :4], short, short)[0],
    )


def test_yarn_golden():
    # dim 8, base 1e4, original length 64. Correction dims d(r) = 8 ln(64 / (2 pi r)) / (2 ln 1e4):
    # d(32) = -0.497 -> floor -1 -> 0; d(1) = 1.008 -> ceil 2. Ramp over j: [0, 0.5, 1, 1].
    s = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    got, scale = rope_frequencies(8, scaling=s)
    np.testing.assert_allclose(
        got, [1.0, 0.5 * 0.1 + 0.5 * 0.1 / 4, 0.01 / 4, 0.001 / 4], rtol=1e-5
    )
    assert scale == pytest.approx(0.1 * math.log(4.0) + 1.0)
    # Without truncation the ramp runs from 0 to 1.008: j = 1 is almost fully interpolated.
    loose, _ = rope_frequencies(8, scaling={**s, "truncate": False})
    w = 1 / 1.00799
    np.testing.assert_allclose(loose[1], w * 0.1 / 4 + (1 - w) * 0.1, rtol=1e-3)
    assert rope_frequencies(8, scaling={**s, "attention_factor": 0.7})[1] == 0.7
    m = rope_frequencies(8, scaling={**s, "mscale": 1.0, "mscale_all_dim": 0.5})[1]
    assert m == pytest.approx((0.1 * math.log(4) + 1) / (0.05 * math.log(4) + 1))


def test_llama3_golden():
    s = {
        "rope_type": "llama3",
        "factor": 8.0,
        "original_max_position_embeddings": 1024,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
    }
    got, _ = rope_frequencies(8, scaling=s)
    # Wavelengths 2 pi / [1, .1, .01, .001] = [6.3, 63, 628, 6283] against the band [256, 1024].
    smooth = (1024 / (2 * math.pi / 0.01) - 1.0) / 3.0
    want = [1.0, 0.1, 0.01 * ((1 - smooth) / 8 + smooth), 0.001 / 8]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_scaling_errors_name_the_problem():
    with pytest.raises(ValueError, match="Known types: linear.*llama3 .needs factor"):
        rope_frequencies(8, scaling={"rope_type": "lineer", "factor": 2.0})
    with pytest.raises(ValueError, match="missing key 'original_max_position_embeddings'"):
        rope_frequencies(8, scaling={"rope_type": "yarn", "factor": 2.0})
    with pytest.raises(ValueError, match="missing key 'factor'"):
        RoPE(scaling={"rope_type": "linear"})
    with pytest.raises(ValueError, match="unknown key.*'fctor'"):
        RoPE(scaling={"rope_type": "linear", "fctor": 2.0})
    with pytest.raises(ValueError, match="does not use key 'beta_fast'"):
        RopeScaling("linear", factor=2.0, beta_fast=8.0)
    with pytest.raises(ValueError, match="no 'rope_type'"):
        RoPE(scaling={"factor": 2.0})


def test_rope_with_scaling_is_hashable_and_round_trips_json():
    enc = RoPE(scaling={"rope_type": "linear", "factor": 4.0})
    assert isinstance(enc.scaling, RopeScaling)
    assert hash(enc) == hash(RoPE(scaling=RopeScaling("linear", factor=4)))
    d = json.loads(json.dumps(dataclasses.asdict(enc)))
    assert RoPE(**d) == enc
    hp = json.loads(json.dumps(enc.hyperparameters()))
    assert hp["scaling"] == {"rope_type": "linear", "factor": 4.0}
    assert RoPE(**hp) == enc
    assert enc.label() == "rope(scaling=linear(factor=4))"


# -- n-D RoPE -------------------------------------------------------------------------------------


def grid_pos(axes, seed=1, length=L):
    return jnp.asarray(np.random.default_rng(seed).integers(0, 50, (B, length, axes), np.int32))


@pytest.mark.parametrize("axes", [2, 3])
def test_rope_nd_invariant_to_shifting_each_axis(axes):
    enc = RoPEND(axes=axes)
    k_dim = 4 * axes
    enc.check(Dims(d_model=H * k_dim, num_heads=H, head_dim=k_dim), 100)
    q, k = qk(k_dim=k_dim)
    pos = grid_pos(axes)
    ref = scores(enc, q, k, pos, pos)
    for a in range(axes):
        shift = jnp.zeros((axes,), jnp.int32).at[a].set(23)[None, None]
        np.testing.assert_allclose(scores(enc, q, k, pos + shift, pos + shift), ref, atol=1e-4)
        assert not np.allclose(scores(enc, q, k, pos, pos + shift), ref, atol=1e-2)


def test_rope_nd_axes_never_mix():
    enc = RoPEND(axes=2)
    q, k = qk()
    # With the y block of q and k zeroed, the scores depend on x only: any change of y is invisible.
    q, k = q.at[..., K // 2 :].set(0.0), k.at[..., K // 2 :].set(0.0)
    pos = grid_pos(2)
    other_y = pos.at[..., 1].set(grid_pos(2, seed=7)[..., 1])
    np.testing.assert_allclose(scores(enc, q, k, other_y, other_y), scores(enc, q, k, pos, pos))
    # The x block is exactly a 1-D RoPE of width K/2 on the x coordinate.
    rq, _ = enc.rotate({}, q, k, pos, pos)
    x_only = apply_rope(q[..., : K // 2], pos[..., 0], rope_frequencies(K // 2)[0])
    np.testing.assert_allclose(rq[..., : K // 2], x_only, atol=1e-6)


def test_rope_nd_errors():
    with pytest.raises(ValueError, match=r"divisible by 2 \* axes = 6.*head_dim=8 with axes=3"):
        RoPEND(axes=3).check(Dims(d_model=16, num_heads=2, head_dim=8), 10)
    q, k = qk()
    with pytest.raises(ValueError, match=r"pos_BLA of shape \(B, L, 2\), got shape \(2, 6\)"):
        RoPEND().rotate({}, q, k, arange_pos(), arange_pos())
    with pytest.raises(ValueError, match="got shape"):
        RoPEND(axes=2).rotate({}, q, k, grid_pos(3), grid_pos(3))


# -- xPos -----------------------------------------------------------------------------------------


def test_xpos_invariant_to_common_shift_and_not_rope():
    enc = XPos()
    q, k = qk()
    ref = scores(enc, q, k, arange_pos(), arange_pos())
    np.testing.assert_allclose(
        scores(enc, q, k, arange_pos(300), arange_pos(300)), ref, rtol=1e-4, atol=1e-4
    )
    rope = scores(RoPE(), q, k, arange_pos(), arange_pos())
    assert not np.allclose(ref, rope, atol=1e-3)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_xpos_scales_each_pair_by_zeta_to_the_distance(layout):
    # One rotation pair: zeta = gamma / (1 + gamma), scores = RoPE scores * zeta^((n - m) / 512).
    enc = XPos(layout=layout)
    q, k = qk(k_dim=2)
    pos = arange_pos(100) * 40
    zeta = 0.4 / 1.4
    dist_LM = (pos[0][:, None] - pos[0][None, :]).astype(jnp.float32)
    want = scores(RoPE(layout=layout), q, k, pos, pos) * zeta ** (dist_LM / 512.0)[None, None]
    np.testing.assert_allclose(scores(enc, q, k, pos, pos), want, rtol=1e-4, atol=1e-6)


# -- contracts ------------------------------------------------------------------------------------

ENCODINGS = [
    (RoPE(), 1),
    (RoPE(layout="interleaved", p=0.5), 1),
    (
        RoPE(
            scaling={"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4}
        ),
        1,
    ),
    (RoPE(scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4}), 1),
    (RoPEND(axes=2), 2),
    (XPos(), 1),
]


def positions_for(axes):
    return arange_pos(3) if axes == 1 else grid_pos(axes)


@pytest.mark.parametrize("enc,axes", ENCODINGS, ids=lambda e: getattr(e, "name", ""))
def test_bf16_in_bf16_out_and_jit_equals_eager(enc, axes):
    q, k = qk()
    pos = positions_for(axes)
    bq, bk = enc.rotate({}, q.astype(jnp.bfloat16), k.astype(jnp.bfloat16), pos, pos)
    assert bq.dtype == bk.dtype == jnp.bfloat16 and bq.shape == q.shape
    eager = enc.rotate({}, q, k, pos, pos)
    jitted = jax.jit(enc.rotate)({}, q, k, pos, pos)
    for a, b in zip(eager, jitted, strict=True):
        assert a.dtype == jnp.float32
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert hash(enc) == hash(dataclasses.replace(enc))


def test_rope_nd_runs_inside_attention_with_pos_BLA():
    from flax import nnx

    from pe_research.config import ModelConfig
    from pe_research.model import Attention

    cfg = ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32)
    enc = RoPEND(axes=2)
    enc.check(cfg.dims(), 50)
    graphdef, state = nnx.split(Attention(cfg, enc, rngs=nnx.Rngs(0)))
    forward = jax.jit(lambda state, x, pos, valid: nnx.merge(graphdef, state)(x, pos, valid))
    x_BLD = jnp.asarray(np.random.default_rng(0).standard_normal((B, L, 16), np.float32))
    y_BLD = forward(state, x_BLD, grid_pos(2), jnp.ones((B, L), bool))
    assert y_BLD.shape == (B, L, 16) and bool(jnp.all(jnp.isfinite(y_BLD)))
    shift = jnp.array([5, -3], jnp.int32)[None, None]
    np.testing.assert_allclose(
        forward(state, x_BLD, grid_pos(2) + shift, jnp.ones((B, L), bool)), y_BLD, atol=1e-4
    )
