"""Inputs and checks the rotary tests share (HoPE, M-RoPE, RoPE scalings): B sequences of L
tokens, H heads of K dimensions, scores of rotated queries and keys."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

B, L, H, K = 2, 6, 2, 12


def qk(seed=0, k_dim=K, length=L):
    """Queries and keys [B, length, H, k_dim], standard normal (numpy draws: eager jax.random
    would compile a handful of kernels per new shape)."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, B, length, H, k_dim), dtype=np.float32)
    return jnp.asarray(q), jnp.asarray(k)


def scores(enc, q, k, qpos, kpos):
    """q.k of every query and key after the rotation, [B, H, L, M]."""
    q, k = enc.rotate({}, q, k, qpos, kpos)
    return jnp.einsum("BLHK,BMHK->BHLM", q, k)


def arange_pos(offset=0, length=L):
    """Positions offset, offset + 1, ... of every sequence, [B, length]."""
    return jnp.broadcast_to(jnp.arange(length)[None] + offset, (B, length))


def check_bf16_and_jit(enc, pos):
    """bfloat16 in, bfloat16 out; jitted equals eager; the encoding hashes as its copy."""
    q, k = qk()
    bq, bk = enc.rotate({}, q.astype(jnp.bfloat16), k.astype(jnp.bfloat16), pos, pos)
    assert bq.dtype == bk.dtype == jnp.bfloat16 and bq.shape == q.shape
    eager = enc.rotate({}, q, k, pos, pos)
    jitted = jax.jit(enc.rotate)({}, q, k, pos, pos)
    for a, b in zip(eager, jitted, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert hash(enc) == hash(dataclasses.replace(enc))
