"""DAPE (data-adaptive position encoding) against its reference's layers in float64 loops, its
causality, and its errors."""

import dataclasses

import jax
import numpy as np
import pytest
from encoding_inputs import DIMS, B, H, K, L, contiguous, qk

from pe_research.encodings import DAPE


def dape_reference(enc, params, q, k, pos):
    """prior + MLP/convolution of (z, prior) in float64 loops (the reference's layers: Linear,
    LeakyReLU(0.01), Linear; or Conv2d (1, S) with padding S // 2 on tril'ed inputs)."""
    p = {n: np.asarray(v, np.float64) for n, v in params.items()}
    prior_params = {n[len("prior_") :]: v for n, v in params.items() if n.startswith("prior_")}
    prior = np.asarray(enc.prior_encoding.bias(prior_params, q, k, pos, pos), np.float64)
    prior = np.broadcast_to(prior, (B, H, L, L))
    z = np.einsum("blhk,bmhk->bhlm", q.astype(np.float64), k.astype(np.float64)) * K**-0.5
    x = np.concatenate([z, prior], axis=1)  # [B, 2H, L, M]
    S = enc.kernel_size
    if S > 1:
        x = x * np.tril(np.ones((L, L)))
    out = np.zeros((B, H, L, L))
    W = p["b_in_W"].shape[0]
    hid = np.zeros((B, W, L, L))
    for b in range(B):
        for i in range(L):
            for j in range(L):
                h = p["b_in_W"].copy()
                for s in range(S):
                    jj = j + s - S // 2
                    if 0 <= jj < L:
                        h += x[b, :, i, jj] @ p["w_in_SCW"][s]
                hid[b, :, i, j] = np.where(h > 0, h, 0.01 * h)
    for b in range(B):
        for i in range(L):
            for j in range(L):
                o = p["b_out_H"].copy()
                for s in range(S):
                    jj = j + s - S // 2
                    if 0 <= jj < L:
                        o += hid[b, :, i, jj] @ p["w_out_SWH"][s]
                out[b, :, i, j] = o
    return prior + out


@pytest.mark.parametrize(
    "enc",
    [DAPE(), DAPE(prior="kerple"), DAPE(prior="fire", kernel_size=3, mlp_width=8)],
    ids=lambda e: e.label(),
)
def test_dape_bias_matches_the_reference_layers(enc):
    params = enc.init_layer(jax.random.key(4), DIMS)
    params = {n: v + 0.1 for n, v in params.items()}  # nonzero biases too
    q, k = qk(4)
    pos = contiguous()
    got = np.asarray(jax.jit(enc.bias)(params, q, k, pos, pos))
    expected = dape_reference(enc, params, q, k, pos)
    rows = np.tril(np.ones((L, L), bool))  # what a causal model reads
    np.testing.assert_allclose(got[..., rows], expected[..., rows], atol=2e-4)


def test_dape_v2_is_causal_in_its_neighbours():
    """The convolution reads the key after each entry; the future is zeroed first, so changing a
    later key leaves the earlier queries' biases unchanged."""
    enc = DAPE(kernel_size=3)
    params = enc.init_layer(jax.random.key(5), DIMS)
    q, k = qk(5)
    pos = contiguous()
    bias = jax.jit(enc.bias)
    before = np.asarray(bias(params, q, k, pos, pos))
    k2 = k.copy()
    k2[:, 4] += 1.0
    after = np.asarray(bias(params, q, k2, pos, pos))
    np.testing.assert_allclose(before[:, :, :4, :4], after[:, :, :4, :4], atol=1e-6)
    assert not np.allclose(before[:, :, 4:], after[:, :, 4:])


ERRORS = [
    (DAPE(prior="t5"), DIMS, "Unknown dape prior 't5'; choose one of alibi, kerple, fire"),
    (DAPE(kernel_size=2), DIMS, "kernel_size=2 must be odd"),
    (DAPE(mlp_width=0), DIMS, "dape mlp_width must be an integer >= 1"),
    (DAPE(kernel_size=3), dataclasses.replace(DIMS, causal=False), "use a causal model"),
]


@pytest.mark.parametrize(("enc", "dims", "match"), ERRORS, ids=lambda x: str(x)[:40])
def test_hyperparameter_errors_name_the_option_and_a_valid_value(enc, dims, match):
    with pytest.raises(ValueError, match=match):
        enc.check(dims, 0)
