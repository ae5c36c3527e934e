"""M-RoPE (multimodal RoPE, Qwen2-VL) and its interleaved variants: RoPE on text, the per-axis
difference formula, the pair-to-axis assignments, and the errors that name the numbers."""

import json

import jax.numpy as jnp
import numpy as np
import pytest
from rotary_inputs import B, H, L, arange_pos, check_bf16_and_jit, qk, scores

from pe_research import encodings
from pe_research.encodings.base import Dims
from pe_research.encodings.mrope import MRoPE, axis_of_pairs, default_sections
from pe_research.encodings.rotary import RoPE


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


@pytest.mark.parametrize("enc,pos", [(MRoPE(assignment="time_low"), grid3())], ids=["mrope"])
def test_bf16_in_bf16_out_and_jit_equals_eager(enc, pos):
    check_bf16_and_jit(enc, pos)
