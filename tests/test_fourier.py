"""FoPE (Fourier position embedding) against an independent formula in float64 numpy, and its
errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from encoding_inputs import DIMS, B, H, K, L, contiguous, qk

from pe_research import encodings
from pe_research.encodings import FoPE
from pe_research.encodings.rotary import HoPE


def test_fope_with_identity_coefficients_is_hope():
    enc = FoPE(train_length=40)
    params = enc.init_layer(jax.random.key(0), DIMS)
    eye = {name: jnp.broadcast_to(jnp.eye(v.shape[-1]), v.shape) for name, v in params.items()}
    q, k = qk()
    pos = contiguous(start=3)
    got = jax.jit(enc.rotate)(eye, q, k, pos, pos)
    expected = jax.jit(HoPE(train_length=40).rotate)({}, q, k, pos, pos)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_fope_series_and_clipped_channels_match_the_formula():
    """cos_j(p) = sum_i C[h, i, j] cos(p theta_i) over the kept frequencies (wavelength <=
    train_length), then x cos + rotate_half(x) sin; clipped channels pass through."""
    enc = FoPE(train_length=70, init_gain=1.0)
    params = enc.init_layer(jax.random.key(1), DIMS)
    theta = 10000.0 ** (-2 * np.arange(K // 2) / K)
    kept = int(np.sum(2 * np.pi / theta <= 70))
    assert kept == enc.kept(K) == 2 and params["cos_coef_HJI"].shape == (H, kept, kept)
    C = np.asarray(params["cos_coef_HJI"], np.float64)
    S = np.asarray(params["sin_coef_HJI"], np.float64)
    q, k = qk(1)
    pos = contiguous(start=5)
    got, _ = jax.jit(enc.rotate)(params, q, k, pos, pos)
    expected = np.zeros((B, L, H, K))
    for b in range(B):
        for t in range(L):
            p = pos[b, t]
            for h in range(H):
                cos = np.ones(K // 2)
                sin = np.zeros(K // 2)
                cos[:kept] = np.cos(p * theta[:kept]) @ C[h]
                sin[:kept] = np.sin(p * theta[:kept]) @ S[h]
                x = q[b, t, h].astype(np.float64)
                a, c = x[: K // 2], x[K // 2 :]
                expected[b, t, h] = np.concatenate([a * cos - c * sin, c * cos + a * sin])
    np.testing.assert_allclose(got, expected, atol=1e-5)
    noise = C - np.eye(kept)
    assert 0 < np.abs(noise).max() < 3.0  # identity plus Xavier noise of gain 1


ERRORS = [
    (FoPE(train_length=6), DIMS, "fope train_length=6 keeps no frequency"),
    (FoPE(init_gain=-1.0), DIMS, "fope init_gain must be a number >= 0"),
    (FoPE(base=1.0), DIMS, "fope base must be > 1"),
    (FoPE(), encodings.Dims(12, 4, 3), "head_dim for fope must be even"),
]


@pytest.mark.parametrize(("enc", "dims", "match"), ERRORS, ids=lambda x: str(x)[:40])
def test_hyperparameter_errors_name_the_option_and_a_valid_value(enc, dims, match):
    with pytest.raises(ValueError, match=match):
        enc.check(dims, 0)
