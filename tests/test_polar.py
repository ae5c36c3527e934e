"""PoPE (polar position embedding) against its logit formula in float64 numpy, and its errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from encoding_inputs import DIMS, B, H, K, L, contiguous, qk

from pe_research.encodings import PoPE

RNG = np.random.default_rng(0)


def softplus(x):
    return np.log1p(np.exp(x))


def test_pope_logits_match_the_polar_formula_in_float64():
    enc = PoPE()
    phase = RNG.normal(size=(H, K))
    q, k = qk(2, dtype=np.float64)
    qpos, kpos = contiguous(start=2), contiguous(start=2)[:, ::-1].copy()
    with jax.enable_x64(True):
        got = np.asarray(enc.logits({"phase_HK": jnp.asarray(phase)}, q, k, qpos, kpos))
        bias = np.asarray(enc.bias({"phase_HK": jnp.asarray(phase)}, q, k, qpos, kpos))
    theta = 10000.0 ** (-np.arange(K) / K)
    expected = np.zeros((B, H, L, L))
    for b in range(B):
        for h in range(H):
            for i in range(L):
                for j in range(L):
                    angle = (qpos[b, i] - kpos[b, j]) * theta + phase[h]
                    magnitude = softplus(q[b, i, h]) * softplus(k[b, j, h])
                    expected[b, h, i, j] = np.sum(magnitude * np.cos(angle))
    np.testing.assert_allclose(got, expected, atol=1e-10)
    # What the model adds: its scale * q.k plus the bias is PoPE's logit, scaled.
    dot = np.einsum("blhk,bmhk->bhlm", q, k)
    np.testing.assert_allclose((dot + 0) * K**-0.5 + bias, expected * K**-0.5, atol=1e-10)


def test_pope_depends_on_position_offsets_only():
    enc = PoPE()
    params = {"phase_HK": jnp.asarray(RNG.normal(size=(H, K)), jnp.float32)}
    q, k = qk(3)
    pos = contiguous()
    base = enc.logits(params, q, k, pos, pos)
    shifted = enc.logits(params, q, k, pos + 11, pos + 11)
    np.testing.assert_allclose(base, shifted, atol=1e-3)
    assert not np.allclose(base, enc.logits(params, q, k, pos, pos[:, ::-1]), atol=1e-2)


ERRORS = [(PoPE(base=0.5), DIMS, "pope base must be > 1")]


@pytest.mark.parametrize(("enc", "dims", "match"), ERRORS, ids=lambda x: str(x)[:40])
def test_hyperparameter_errors_name_the_option_and_a_valid_value(enc, dims, match):
    with pytest.raises(ValueError, match=match):
        enc.check(dims, 0)
