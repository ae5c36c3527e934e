"""Inputs the encoding tests share: head dimensions, random queries and keys, contiguous
positions (B sequences of L tokens, H heads of K dimensions)."""

import numpy as np

from pe_research import encodings

DIMS = encodings.Dims(d_model=32, num_heads=4, head_dim=8)
B, L, H, K = 2, 7, 4, 8


def qk(seed=0, length=L, dtype=np.float32):
    """Queries and keys [B, length, H, K], standard normal."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(B, length, H, K)).astype(dtype)
    k = rng.normal(size=(B, length, H, K)).astype(dtype)
    return q, k


def contiguous(length=L, start=0):
    """Positions start, start + 1, ... of every sequence, [B, length]."""
    return np.broadcast_to(np.arange(start, start + length, dtype=np.int32), (B, length))
