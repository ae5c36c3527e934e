"""Temperature (Llama 4's query scaling) and NAPE (ALiBi heads plus length-adaptive temperature)
against their references' formulas, and their errors."""

import jax
import numpy as np
import pytest
from encoding_inputs import DIMS, B, H, L, contiguous, qk

from pe_research.encodings import NAPE, Temperature


def test_temperature_scales_queries_by_llama4s_formula():
    enc = Temperature(floor_scale=4)
    q, k = qk(7, length=20)
    pos = contiguous(20)
    q2, k2 = enc.rotate({}, q, k, pos, pos)
    np.testing.assert_array_equal(k2, k)
    # transformers' Llama4TextAttention: log1p(floor((cache_position + 1) / floor_scale)) * 0.1 + 1
    scale = np.log1p(np.floor((np.arange(20) + 1.0) / 4)) * 0.1 + 1.0
    np.testing.assert_allclose(q2, q * scale[None, :, None, None], rtol=1e-6)
    assert scale[2] == 1.0 and scale[3] > 1.0


def test_nape_alibi_heads_and_length_adaptive_temperature():
    enc = NAPE()
    params = enc.init_layer(jax.random.key(8), DIMS)
    beta, gamma = np.asarray(params["beta_H"]), np.asarray(params["gamma_H"])
    assert ((0.1 <= beta) & (beta <= 1.0)).all() and np.abs(gamma).max() < 0.5
    q, k = qk(8)
    pos = contiguous(start=1)
    bias = np.asarray(enc.bias(params, q, k, pos, pos))
    dist = np.abs(pos[:, None, :] - pos[:, :, None])
    for h in range(H):  # heads 0, 1: ALiBi with slopes 1, 1/2; heads 2, 3: NoPE
        slope = 1.0 / (h + 1) if h < 2 else 0.0
        np.testing.assert_allclose(bias[:, h], -slope * dist, atol=1e-6)
    q2, _ = enc.rotate(params, q, k, pos, pos)
    scale = np.ones((B, L, H))
    for h in (2, 3):
        scale[..., h] = 1.0 + beta[h] * np.log(pos + 2.0) ** gamma[h]
    np.testing.assert_allclose(q2, q * scale[..., None], rtol=1e-5)
    q3, _ = NAPE(scale="none").rotate({}, q, k, pos, pos)
    np.testing.assert_array_equal(q3, q)


ERRORS = [
    (Temperature(floor_scale=0), DIMS, "temperature floor_scale must be > 0"),
    (Temperature(attn_scale=0.0), DIMS, "temperature attn_scale must be > 0"),
    (NAPE(alibi_heads=5), DIMS, "alibi_heads=5 is more than the model's num_heads=4"),
    (NAPE(scale="fixed"), DIMS, "Unknown nape scale 'fixed'"),
]


@pytest.mark.parametrize(("enc", "dims", "match"), ERRORS, ids=lambda x: str(x)[:40])
def test_hyperparameter_errors_name_the_option_and_a_valid_value(enc, dims, match):
    with pytest.raises(ValueError, match=match):
        enc.check(dims, 0)
