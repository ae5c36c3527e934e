"""Rotary encodings since 2024: M-RoPE and its interleaved variants, HoPE, the longrope scaling,
and the `rope_scaling` / `rope_parameters` names of RoPE's scaling."""

import dataclasses
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pe_research import encodings
from pe_research.encodings.base import Dims
from pe_research.encodings.mrope import MRoPE, axis_of_pairs, default_sections
from pe_research.encodings.rotary import HoPE, RoPE, RopeScaling, apply_rope, rope_frequencies

B, L, H, K = 2, 6, 2, 12


def qk(seed=0, k_dim=K, length=L):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, B, length, H, k_dim), dtype=np.float32)
    return jnp.asarray(q), jnp.asarray(k)


def scores(enc, q, k, qpos, kpos):
    q, k = enc.rotate({}, q, k, qpos, kpos)
    return jnp.einsum("BLHK,BMHK->BHLM", q, k)


def arange_pos(offset=0, length=L):
    return jnp.broadcast_to(jnp.arange(length)[None] + offset, (B, length))


def grid3(seed=1, length=L, high=40):
    return jnp.asarray(np.random.default_rng(seed).integers(0, high, (B, length, 3), np.int32))


def dims(head_dim):
    return Dims(d_model=H * head_dim, num_heads=H, head_dim=head_dim)


def numpy_scores(q, k, qpos_BLA, kpos_BMA, axis_J, base, layout="half"):
    """q.k after rotation, from the per-axis differences only: pair j with components (a, b) as
    the complex number a + ib, Re(z_q conj(z_k) exp(i theta_j (pq[axis_j] - pk[axis_j])))."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    qpos_BLA, kpos_BMA = np.asarray(qpos_BLA), np.asarray(kpos_BMA)
    Kd = q.shape[-1]
    J = Kd // 2
    out = np.zeros((q.shape[0], q.shape[2], q.shape[1], k.shape[1]))
    for j in range(J):
        theta = base ** (-2.0 * j / Kd)
        a, b = (j, j + J) if layout == "half" else (2 * j, 2 * j + 1)
        zq = q[..., a] + 1j * q[..., b]  # B L H
        zk = k[..., a] + 1j * k[..., b]  # B M H
        ax = axis_J[j]
        diff_BLM = qpos_BLA[:, :, None, ax] - kpos_BMA[:, None, :, ax]
        prod = np.einsum("blh,bmh->bhlm", zq, np.conj(zk))
        out += np.real(prod * np.exp(1j * theta * diff_BLM)[:, None])
    return out


# -- M-RoPE ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("assignment", ["blocks", "interleaved", "time_low"])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_mrope_on_text_is_exactly_rope(assignment, layout):
    q, k = qk()
    pos_BL = arange_pos(4)
    pos_BLA = jnp.repeat(pos_BL[..., None], 3, axis=-1)
    got = MRoPE(assignment=assignment, layout=layout).rotate({}, q, k, pos_BLA, pos_BLA)
    want = RoPE(layout=layout).rotate({}, q, k, pos_BL, pos_BL)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    # Not vacuous: on distinct per-axis coordinates it is not RoPE of any one axis.
    other = MRoPE(assignment=assignment, layout=layout).rotate({}, q, k, grid3(), grid3())[0]
    assert not np.allclose(other, RoPE(layout=layout).rotate({}, q, k, grid3()[..., 0], pos_BL)[0])


@pytest.mark.parametrize("assignment", ["blocks", "interleaved", "time_low"])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_mrope_scores_match_the_per_axis_difference_formula(assignment, layout):
    enc = MRoPE(sections=(2, 2, 2), assignment=assignment, layout=layout, base=100.0)
    q, k = qk()
    qpos, kpos = grid3(seed=3), grid3(seed=4)
    axis_J = axis_of_pairs((2, 2, 2), assignment)
    want = numpy_scores(q, k, qpos, kpos, axis_J, 100.0, layout)
    np.testing.assert_allclose(scores(enc, q, k, qpos, kpos), want, atol=2e-5)


@pytest.mark.parametrize("assignment", ["blocks", "interleaved", "time_low"])
def test_mrope_invariant_to_shifting_each_axis_and_preserves_norms(assignment):
    enc = MRoPE(assignment=assignment)
    q, k = qk()
    pos = grid3()
    ref = scores(enc, q, k, pos, pos)
    for a in range(3):
        shift = jnp.zeros((3,), jnp.int32).at[a].set(17)[None, None]
        np.testing.assert_allclose(scores(enc, q, k, pos + shift, pos + shift), ref, atol=1e-4)
        # Every axis matters: shifting only the keys' coordinate a changes the scores.
        assert not np.allclose(scores(enc, q, k, pos, pos + shift), ref, atol=1e-2)
    rq, rk = enc.rotate({}, q, k, pos, pos)
    np.testing.assert_allclose(jnp.linalg.norm(rq, axis=-1), jnp.linalg.norm(q, axis=-1), rtol=1e-5)
    np.testing.assert_allclose(jnp.linalg.norm(rk, axis=-1), jnp.linalg.norm(k, axis=-1), rtol=1e-5)


def test_mrope_pair_to_axis_assignment_formulas():
    sections = (16, 24, 24)  # Qwen2-VL at head_dim 128
    blocks = axis_of_pairs(sections, "blocks")
    assert blocks == tuple(0 if j < 16 else 1 if j < 40 else 2 for j in range(64))
    assert axis_of_pairs((8, 8, 8), "interleaved") == tuple(j % 3 for j in range(24))
    # Unequal sections (Qwen3-VL's 24, 20, 20): t, h, w while all have pairs, then time alone.
    inter = axis_of_pairs((24, 20, 20), "interleaved")
    assert inter == tuple(j % 3 if j < 60 else 0 for j in range(64))
    low = axis_of_pairs(sections, "time_low")
    assert low == tuple(1 + j % 2 if j < 48 else 0 for j in range(64))
    for assignment in ("blocks", "interleaved", "time_low"):
        got = axis_of_pairs(sections, assignment)
        assert [got.count(a) for a in range(3)] == list(sections)


def test_mrope_default_sections_scale_with_the_head():
    assert default_sections(128) == (16, 24, 24)
    assert default_sections(12) == (2, 2, 2)
    assert default_sections(8) == (2, 1, 1)
    for head_dim in (6, 8, 16, 64, 80):
        MRoPE().check(dims(head_dim), 100)
        assert sum(default_sections(head_dim)) == head_dim // 2


def test_mrope_errors_name_the_numbers():
    with pytest.raises(ValueError, match=r"sections \(2, 2, 1\) \(sum 5\).*head_dim / 2 = 6"):
        MRoPE(sections=(2, 2, 1)).check(dims(12), 10)
    with pytest.raises(ValueError, match=r"choose sections summing to 6, e.g. \(2, 2, 2\)"):
        MRoPE(sections=(4, 2, 2)).check(dims(12), 10)
    with pytest.raises(ValueError, match="at least one rotation pair"):
        MRoPE(sections=(6, 0, 0)).check(dims(12), 10)
    with pytest.raises(ValueError, match="must be 3 integers"):
        MRoPE(sections=(3, 3)).check(dims(12), 10)
    with pytest.raises(ValueError, match=r"default sections \(2, 0, 0\).*head_dim to at least 6"):
        MRoPE().check(dims(4), 10)
    with pytest.raises(ValueError, match="head_dim for mrope must be even"):
        MRoPE().check(dims(7), 10)
    with pytest.raises(ValueError, match="Unknown mrope assignment 'zigzag'"):
        MRoPE(assignment="zigzag").check(dims(12), 10)
    q, k = qk()
    with pytest.raises(ValueError, match=r"pos_BLA of shape \(B, L, 3\).*got shape \(2, 6\)"):
        MRoPE().rotate({}, q, k, arange_pos(), arange_pos())
    with pytest.raises(ValueError, match=r"got shape \(2, 6, 2\)"):
        MRoPE().rotate({}, q, k, grid3()[..., :2], grid3()[..., :2])


def test_mrope_round_trips_config_json_and_is_hashable():
    enc = encodings.get("mrope", sections=[2, 2, 2], assignment="interleaved")
    assert enc.sections == (2, 2, 2) and hash(enc) == hash(
        MRoPE(sections=(2, 2, 2), assignment="interleaved")
    )
    d = json.loads(json.dumps(encodings.to_dict(enc)))
    assert encodings.from_dict(d) == enc
    assert enc.position_axes == 3
    assert enc.label() == "mrope(sections=(2, 2, 2), assignment=interleaved)"


# -- HoPE -----------------------------------------------------------------------------------------


def numpy_hope(x, pos, base, train_length):
    """HoPE by loops: pair (j, j + J) turns by pos * theta_j iff 2 pi / theta_j <= train_length."""
    x = np.asarray(x, np.float64)
    out = x.copy()
    Kd = x.shape[-1]
    J = Kd // 2
    for j in range(J):
        theta = base ** (-2.0 * j / Kd)
        if 2 * math.pi / theta > train_length:
            continue
        for b in range(x.shape[0]):
            for i in range(x.shape[1]):
                c, s = math.cos(pos[b][i] * theta), math.sin(pos[b][i] * theta)
                lo, hi = x[b, i, :, j], x[b, i, :, j + J]
                out[b, i, :, j] = lo * c - hi * s
                out[b, i, :, j + J] = hi * c + lo * s
    return out


@pytest.mark.parametrize("train_length", [7, 64, 700, 10**6])
def test_hope_matches_the_loop_formula(train_length):
    q, _ = qk()
    pos = arange_pos(5)
    enc = HoPE(base=100.0, train_length=train_length)
    got, _ = enc.rotate({}, q, q, pos, pos)
    np.testing.assert_allclose(got, numpy_hope(q, np.asarray(pos), 100.0, train_length), atol=1e-6)


def test_hope_kept_pairs_and_p_rope():
    # head_dim 12, base 10000: wavelengths 2 pi * 10000^(j/6) = 6.3, 29, 136, 628, 2916, 13535.
    enc = HoPE(train_length=64)
    assert enc.kept_pairs(12) == 2
    assert [HoPE(train_length=n).kept_pairs(12) for n in (7, 29, 30, 700, 14000)] == [1, 1, 2, 4, 6]
    q, k = qk()
    pos = arange_pos(3)
    hope = enc.rotate({}, q, k, pos, pos)
    prope = RoPE(p=2 / 6).rotate({}, q, k, pos, pos)
    for a, b in zip(hope, prope, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(hope[0], RoPE().rotate({}, q, k, pos, pos)[0], atol=1e-3)
    # The position-free part passes through unchanged.
    np.testing.assert_array_equal(hope[0][..., 2:6], q[..., 2:6])
    np.testing.assert_array_equal(hope[0][..., 8:], q[..., 8:])


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_hope_is_relative_and_preserves_norms(layout):
    enc = HoPE(train_length=700, layout=layout)
    q, k = qk()
    ref = scores(enc, q, k, arange_pos(), arange_pos())
    np.testing.assert_allclose(scores(enc, q, k, arange_pos(91), arange_pos(91)), ref, atol=1e-4)
    assert not np.allclose(scores(enc, q, k, arange_pos(), arange_pos(2)), ref, atol=1e-2)
    rq, _ = enc.rotate({}, q, k, arange_pos(50), arange_pos(50))
    np.testing.assert_allclose(jnp.linalg.norm(rq, axis=-1), jnp.linalg.norm(q, axis=-1), rtol=1e-5)


def test_hope_errors():
    with pytest.raises(ValueError, match=r"train_length=6 keeps no rotation pair.*>= 7"):
        HoPE(train_length=6).check(dims(12), 10)
    with pytest.raises(ValueError, match="head_dim for hope must be even"):
        HoPE().check(dims(5), 10)
    with pytest.raises(ValueError, match="hope base must be > 1"):
        HoPE(base=0.5).check(dims(12), 10)
    with pytest.raises(ValueError, match="Unknown rope layout 'diagonal'"):
        HoPE(layout="diagonal").check(dims(12), 10)


# -- longrope -------------------------------------------------------------------------------------

ORIG = 16
SHORT = (1.0, 1.25, 1.5, 2.0, 3.0, 4.0)
LONG = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)


def longrope(**extra):
    return {
        "rope_type": "longrope",
        "factor": 8.0,
        "original_max_position_embeddings": ORIG,
        "short_factor": list(SHORT),
        "long_factor": list(LONG),
        **extra,
    }


def numpy_longrope(dim, base, seq_len, factor, orig, short, long, attention_factor=None):
    """The LongRoPE reference: inv_freq_j = 1 / (ext_j * base^(2j / dim)), ext = long beyond the
    original context, short otherwise; scale sqrt(1 + ln(factor) / ln(orig)) unless given."""
    ext = long if seq_len is not None and seq_len > orig else short
    inv = [1.0 / (ext[j] * base ** (2 * j / dim)) for j in range(dim // 2)]
    if attention_factor is None:
        attention_factor = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(orig))
    return np.array(inv), attention_factor


@pytest.mark.parametrize("seq_len", [None, 1, ORIG, ORIG + 1, 10 * ORIG])
@pytest.mark.parametrize("extra", [{}, {"attention_factor": 0.8}, {"factor": 1.0}])
def test_longrope_matches_the_reference_formula(seq_len, extra):
    s = longrope(**extra)
    got, scale = rope_frequencies(K, scaling=s, seq_len=seq_len)
    want, want_scale = numpy_longrope(
        K, 10000.0, seq_len, s["factor"], ORIG, SHORT, LONG, extra.get("attention_factor")
    )
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert scale == pytest.approx(want_scale, rel=1e-12)
    assert (scale == 1.0) == (s["factor"] == 1.0 and "attention_factor" not in extra)


def test_longrope_switches_factors_on_the_largest_key_position_and_traces():
    enc = RoPE(scaling=longrope())
    q, k = qk()
    outs = []
    # Largest key positions ORIG - 1 (short factors) and ORIG (long: seq_len ORIG + 1 > ORIG).
    for pos in (arange_pos(ORIG - L), arange_pos(ORIG - L + 1)):
        inv, scale = numpy_longrope(K, 10000.0, int(pos.max()) + 1, 8.0, ORIG, SHORT, LONG)
        want = apply_rope(q, pos, jnp.asarray(inv, jnp.float32), attention_scale=scale)
        outs.append(enc.rotate({}, q, k, pos, pos)[0])
        np.testing.assert_allclose(outs[-1], want, atol=1e-5)
    short_at_long_pos = apply_rope(
        q, arange_pos(ORIG - L + 1), jnp.asarray(numpy_longrope(K, 1e4, 1, 8, ORIG, SHORT, LONG)[0])
    )
    assert not np.allclose(outs[1] / math.sqrt(1 + math.log(8) / math.log(ORIG)), short_at_long_pos)
    traced = jax.jit(lambda n: rope_frequencies(K, scaling=longrope(), seq_len=n)[0])
    for n in (ORIG, ORIG + 1):
        want = numpy_longrope(K, 1e4, n, 8, ORIG, SHORT, LONG)[0]
        np.testing.assert_allclose(traced(n), want, rtol=1e-6)


def test_longrope_errors_name_the_problem():
    with pytest.raises(ValueError, match="'longrope' is missing key 'long_factor'"):
        RoPE(scaling={k: v for k, v in longrope().items() if k != "long_factor"})
    with pytest.raises(ValueError, match=r"short_factor has 4 factors .* 12 components\) has 6"):
        RoPE(scaling=longrope(short_factor=[1, 1, 1, 1])).check(dims(K), 100)
    with pytest.raises(ValueError, match=r"'long_factor' must hold positive factors"):
        RoPE(scaling=longrope(long_factor=[1, 0, 1, 1, 1, 1]))
    with pytest.raises(ValueError, match="needs 'short_factor' as a list of numbers"):
        RoPE(scaling=longrope(short_factor=2.0))
    with pytest.raises(ValueError, match="original_max_position_embeddings >= 2, got 1"):
        RoPE(scaling=longrope(original_max_position_embeddings=1))
    with pytest.raises(ValueError, match="does not use key 'beta_fast'"):
        RoPE(scaling=longrope(beta_fast=32.0))


def test_longrope_round_trips_json_and_stays_hashable():
    enc = RoPE(scaling=longrope())
    assert enc.scaling.short_factor == SHORT and hash(enc) == hash(RoPE(scaling=longrope()))
    hp = json.loads(json.dumps(enc.hyperparameters()))
    assert hp["scaling"]["long_factor"] == list(LONG)
    assert RoPE(**hp) == enc
    assert encodings.from_dict(json.loads(json.dumps(encodings.to_dict(enc)))) == enc


# -- rope_scaling / rope_parameters ---------------------------------------------------------------


@pytest.mark.parametrize("scaling", [longrope(), {"rope_type": "linear", "factor": 4.0}])
def test_rope_parameters_and_rope_scaling_name_the_scaling(scaling):
    plain = RoPE(scaling=scaling)
    q, k = qk()
    pos = arange_pos(20)
    for name in ("rope_scaling", "rope_parameters"):
        enc = encodings.get("rope", **{name: scaling})
        assert enc == plain and enc.scaling == plain.scaling
        assert enc.rope_scaling is None and enc.rope_parameters is None
        assert enc.hyperparameters() == plain.hyperparameters() and enc.label() == plain.label()
        got, want = enc.rotate({}, q, k, pos, pos), plain.rotate({}, q, k, pos, pos)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
    # The same value under two names is fine; so is a RopeScaling.
    assert RoPE(scaling=scaling, rope_parameters=scaling) == plain
    assert RoPE(rope_parameters=RopeScaling.from_dict(scaling)) == plain
    assert RoPE(scaling=scaling) != RoPE()


def test_rope_parameters_newer_form():
    d = {"rope_type": "default", "rope_theta": 500000.0, "partial_rotary_factor": 0.5}
    assert RoPE(base=500000.0, fraction=0.5, rope_parameters=d) == RoPE(base=500000, fraction=0.5)
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    enc = RoPE(base=5e5, rope_parameters={**yarn, "rope_theta": 5e5})
    assert enc == RoPE(base=5e5, scaling=yarn)


def test_rope_parameters_in_config_json():
    from pe_research.config import RunConfig

    d = RunConfig().to_dict()
    d["encoding"] = {"name": "rope", "rope_parameters": longrope()}
    assert RunConfig.from_dict(d).encoding == RoPE(scaling=longrope())


def test_rope_parameters_errors():
    linear = {"rope_type": "linear", "factor": 2.0}
    with pytest.raises(ValueError, match=r"different scalings under several names \(rope_scal"):
        RoPE(rope_scaling=linear, rope_parameters={**linear, "factor": 3.0})
    with pytest.raises(ValueError, match=r"scaling=linear\(factor=2\), rope_parameters=None"):
        RoPE(scaling=linear, rope_parameters={"rope_type": "default"})
    with pytest.raises(ValueError, match=r"sets rope_theta=500000 but base=10000: set base=500000"):
        RoPE(rope_parameters={"rope_type": "default", "rope_theta": 5e5})
    with pytest.raises(ValueError, match=r"partial_rotary_factor=0.5 but fraction=1"):
        RoPE(rope_scaling={**linear, "partial_rotary_factor": 0.5})
    with pytest.raises(
        ValueError, match=r"rope_parameters has unknown key\(s\) \['fctor'\]; known keys: rope_type"
    ):
        RoPE(rope_parameters={"rope_type": "linear", "fctor": 2.0})
    with pytest.raises(ValueError, match=r"rope_type 'default' \(no scaling\) has scaling key"):
        RoPE(rope_parameters={"rope_type": "default", "factor": 2.0})
    with pytest.raises(ValueError, match="rope_scaling must be a dict, got float"):
        RoPE(rope_scaling=2.0)
    with pytest.raises(ValueError, match="Known types: .*longrope .needs factor"):
        RoPE(rope_parameters={"rope_type": "su", "factor": 2.0})


# -- contracts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "enc,pos",
    [
        (MRoPE(assignment="time_low"), grid3()),
        (HoPE(train_length=100), arange_pos(3)),
        (RoPE(scaling=longrope()), arange_pos(3)),
    ],
    ids=["mrope", "hope", "longrope"],
)
def test_bf16_in_bf16_out_and_jit_equals_eager(enc, pos):
    q, k = qk()
    bq, bk = enc.rotate({}, q.astype(jnp.bfloat16), k.astype(jnp.bfloat16), pos, pos)
    assert bq.dtype == bk.dtype == jnp.bfloat16 and bq.shape == q.shape
    eager = enc.rotate({}, q, k, pos, pos)
    jitted = jax.jit(enc.rotate)({}, q, k, pos, pos)
    for a, b in zip(eager, jitted, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert hash(enc) == hash(dataclasses.replace(enc))
