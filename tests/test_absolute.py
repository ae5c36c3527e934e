"""Properties of the absolute encodings: the essay's integer, normalized, binary and sinusoids."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pe_research.encodings.absolute import (
    Binary,
    Integer,
    NormalizedInteger,
    Sinusoidal,
    binary_table,
    sinusoidal_table,
)
from pe_research.encodings.base import Dims

DIMS = Dims(d_model=16, num_heads=2, head_dim=8)


def _encode(enc, length: int, d: int = 16) -> np.ndarray:
    """The vector enc adds at each position 0..length-1 of one row (embed of zeros)."""
    x_BLD = jnp.zeros((1, length, d), jnp.float32)
    pos_BL = jnp.arange(length, dtype=jnp.int32)[None, :]
    return np.asarray(enc.embed({}, x_BLD, pos_BL))[0]


def test_binary_table_golden_values_lsb_first_and_stretched():
    table_LD = np.asarray(binary_table(jnp.array([0, 1, 2, 5, 6]), 8, bits=4))
    # Each of the 4 bits fills 2 components, least significant bit first.
    np.testing.assert_array_equal(
        table_LD,
        [
            [0, 0, 0, 0, 0, 0, 0, 0],
            [1, 1, 0, 0, 0, 0, 0, 0],
            [0, 0, 1, 1, 0, 0, 0, 0],
            [1, 1, 0, 0, 1, 1, 0, 0],
            [0, 0, 1, 1, 1, 1, 0, 0],
        ],
    )
    # The essay's example: 252 = 0b11111100 over 8 components, one bit each.
    np.testing.assert_array_equal(
        binary_table(jnp.array([252]), 8, bits=8)[0], [0, 0, 1, 1, 1, 1, 1, 1]
    )


def test_binary_positions_are_unique_and_out_of_range_reads_nan():
    table_LD = np.asarray(binary_table(jnp.arange(2**6), 12, bits=6))
    assert len({tuple(row) for row in table_LD}) == 2**6
    assert np.isnan(np.asarray(binary_table(jnp.array([2**6, -1]), 12, bits=6))).all()


def test_binary_check_rejects_positions_beyond_its_bits():
    Binary(bits=6).check(DIMS, max_position=63)
    with pytest.raises(ValueError, match="raise bits to at least 7"):
        Binary(bits=6).check(DIMS, max_position=64)
    with pytest.raises(ValueError, match="d_model"):
        Binary(bits=17).check(DIMS, max_position=10)


def test_integer_adds_the_raw_position_to_every_component():
    pe_LD = _encode(Integer(), 12)
    np.testing.assert_array_equal(pe_LD, np.broadcast_to(np.arange(12.0)[:, None], (12, 16)))


def test_normalized_integer_depends_on_length_but_integer_and_sinusoidal_do_not():
    # The essay's Pr1: position 5 in a sequence of length 10 versus 10,000.
    short, long = 10, 10_000
    norm_short, norm_long = (
        _encode(NormalizedInteger(), short)[5],
        _encode(NormalizedInteger(), long)[5],
    )
    np.testing.assert_allclose(norm_short, 5 / 10)
    np.testing.assert_allclose(norm_long, 5 / 10_000)
    for enc in (Integer(), Sinusoidal()):
        np.testing.assert_array_equal(_encode(enc, short)[5], _encode(enc, long)[5])


def test_normalized_integer_takes_each_rows_length_from_its_positions():
    # Two rows padded to one width: n = max position + 1 for each row; padding (pos 0) adds 0.
    valid_BL = jnp.arange(6)[None, :] < jnp.array([[3], [6]])
    pos_BL = jnp.where(valid_BL, jnp.arange(6, dtype=jnp.int32)[None, :], 0)
    out_BLD = np.asarray(NormalizedInteger().embed({}, jnp.zeros((2, 6, 4)), pos_BL))
    np.testing.assert_allclose(out_BLD[0, :, 0], [0, 1 / 3, 2 / 3, 0, 0, 0], rtol=1e-6)
    np.testing.assert_allclose(out_BLD[1, :, 0], np.arange(6) / 6, rtol=1e-6)


def test_sinusoidal_golden_values_interleaved():
    d, base = 8, 10000.0
    table_LD = np.asarray(sinusoidal_table(jnp.arange(4), d, base=base))
    for p in range(4):
        for i in range(d // 2):
            angle = p / base ** (2 * i / d)
            assert table_LD[p, 2 * i] == pytest.approx(math.sin(angle), abs=1e-6)
            assert table_LD[p, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-6)


def test_sinusoidal_halves_is_a_fixed_permutation_of_interleaved():
    d = 8
    pos_L = jnp.arange(0, 200, 7)
    inter_LD = np.asarray(sinusoidal_table(pos_L, d, layout="interleaved"))
    halves_LD = np.asarray(sinusoidal_table(pos_L, d, layout="halves"))
    perm = [*range(0, d, 2), *range(1, d, 2)]  # all sines first, then all cosines
    np.testing.assert_array_equal(halves_LD, inter_LD[:, perm])
    halves_pe_LD = _encode(Sinusoidal(layout="halves"), 200, d)[np.asarray(pos_L)]
    np.testing.assert_allclose(halves_pe_LD, halves_LD, atol=1e-6)


@pytest.mark.parametrize("k", [1, 5, 37])
def test_sinusoidal_shift_is_a_block_rotation(k):
    # The essay's M_k: PE(p + k) = M_k PE(p), with M_k block diagonal of 2x2 rotations by w_i k.
    d, base = 16, 10000.0
    w_J = base ** (-np.arange(0, d, 2) / d)
    m_DD = np.zeros((d, d))
    for j, w in enumerate(w_J):
        c, s = math.cos(w * k), math.sin(w * k)
        m_DD[2 * j : 2 * j + 2, 2 * j : 2 * j + 2] = [[c, s], [-s, c]]
    pos_L = jnp.arange(0, 50, 3)
    pe_LD = np.asarray(sinusoidal_table(pos_L, d, base=base), np.float64)
    shifted_LD = np.asarray(sinusoidal_table(pos_L + k, d, base=base), np.float64)
    np.testing.assert_allclose(pe_LD @ m_DD.T, shifted_LD, atol=2e-5)


@pytest.mark.parametrize("enc", [Integer(), NormalizedInteger(), Binary(bits=8), Sinusoidal()])
def test_bf16_in_bf16_out_and_jit_equals_eager(enc):
    x_BLD = jax.random.normal(jax.random.key(0), (2, 5, 16)).astype(jnp.bfloat16)
    pos_BL = jnp.tile(jnp.arange(5, dtype=jnp.int32)[None, :], (2, 1))
    out = enc.embed({}, x_BLD, pos_BL)
    assert out.dtype == jnp.bfloat16 and out.shape == x_BLD.shape
    jitted = jax.jit(enc.embed)({}, x_BLD, pos_BL)
    np.testing.assert_array_equal(np.asarray(out, np.float32), np.asarray(jitted, np.float32))
    assert hash(enc) == hash(type(enc)(**enc.hyperparameters()))
