"""HoPE (high-frequency RoPE: only the pairs whose wavelength fits the training length turn)
against the loop formula, as p-RoPE, relative and norm preserving, and its errors."""

import math

import jax.numpy as jnp
import numpy as np
import pytest
from rotary_inputs import H, arange_pos, check_bf16_and_jit, qk, scores

from pe_research.encodings.base import Dims
from pe_research.encodings.rotary import HoPE, RoPE


def dims(head_dim):
    return Dims(d_model=H * head_dim, num_heads=H, head_dim=head_dim)


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


@pytest.mark.parametrize("enc,pos", [(HoPE(train_length=100), arange_pos(3))], ids=["hope"])
def test_bf16_in_bf16_out_and_jit_equals_eager(enc, pos):
    check_bf16_and_jit(enc, pos)
