"""Attention normalisations: how attention logits become the weights that multiply v.

Each is a pure function (logits_BHLM, allowed_BLM, **its parameters) -> float32 weights_BHLM,
where allowed_BLM says which keys each query may attend to (valid, and not in its future in a
causal model); `ModelConfig.normalization` names one and the model looks it up in
NORMALIZATIONS. A normalisation with learned parameters (ssmax's per-head scales) has them
initialised per attention layer by `init_params`; the others take none.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def softmax(logits_BHLM: jax.Array, allowed_BLM: jax.Array) -> jax.Array:
    """Softmax over the allowed keys (float32), as in Vaswani et al. (2017, arXiv 1706.03762,
    "Attention Is All You Need"); masked keys get weight 0 (a row with none allowed is uniform)."""
    logits_BHLM = jnp.where(allowed_BLM[:, None], logits_BHLM, jnp.finfo(jnp.float32).min)
    return jax.nn.softmax(logits_BHLM, axis=-1)


def stick_breaking(logits_BHLM: jax.Array, allowed_BLM: jax.Array) -> jax.Array:
    """Stick-breaking weights (Tan et al., 2024, "Scaling Stick-Breaking Attention", arXiv
    2410.17980): A_ij = beta_ij prod_{j<k<i} (1 - beta_ik), beta = sigmoid(logits), over allowed
    keys j < i (the query's own token excluded, as in the formula); no normalisation, so a row
    sums to at most 1 (the first token's row is 0).

    In log space, log A_ij = log sigmoid(z_ij) + sum_{j<k<i} log sigmoid(-z_ik): a suffix sum
    over keys, float32, with no product of many factors below 1.
    """
    L, M = logits_BHLM.shape[-2:]
    before_B1LM = (allowed_BLM & jnp.tril(jnp.ones((L, M), bool), k=-1)[None])[:, None]
    log_rest_BHLM = jnp.where(before_B1LM, jax.nn.log_sigmoid(-logits_BHLM), 0.0)
    # sum_{k >= j} of the allowed terms, less the k = j term: the keys strictly between.
    suffix_BHLM = jnp.flip(jnp.cumsum(jnp.flip(log_rest_BHLM, axis=-1), axis=-1), axis=-1)
    log_probs_BHLM = jax.nn.log_sigmoid(logits_BHLM) + suffix_BHLM - log_rest_BHLM
    return jnp.where(before_B1LM, jnp.exp(log_probs_BHLM), 0.0)


def ssmax(logits_BHLM: jax.Array, allowed_BLM: jax.Array, *, scale_H: jax.Array) -> jax.Array:
    """Scalable-Softmax (Nakanishi, 2025, arXiv 2501.19399, "Scalable-Softmax Is Superior for
    Attention"): softmax over the allowed keys of (s_h log n) z, n the number of keys the query
    attends to, s learned per layer and head (init 1, the asentmax code's "nakanishi" scale):
    n^(s z_j) / sum_k n^(s z_k), whose largest weight does not fade as n grows."""
    n_B1L1 = jnp.sum(allowed_BLM, axis=-1, dtype=jnp.float32)[:, None, :, None]
    scale_1H11 = scale_H.astype(jnp.float32)[None, :, None, None]
    return softmax(logits_BHLM * scale_1H11 * jnp.log(jnp.maximum(n_B1L1, 1.0)), allowed_BLM)


def entmax15(logits_BHLM: jax.Array, allowed_BLM: jax.Array) -> jax.Array:
    """1.5-entmax over the allowed keys (Peters, Niculae and Martins, 2019, arXiv 1905.05702,
    "Sparse Sequence-to-Sequence Models"), the alpha of ASEntmax (Vasylenko et al., 2025):
    p_j = [z_j / 2 - tau]_+^2 with tau such that the p sum to 1; sparse, so a query can give
    far keys exactly zero weight. Exact, by sorting (their Algorithm 2): for the k largest
    z / 2, tau_k = mean_k - sqrt((1 - k var_k) / k), and tau is tau_k at the largest k with
    tau_k <= the k-th largest. Gradients flow through the sort and the chosen support."""
    # Masked keys at a large finite negative value sort last and never join the support; an
    # infinity would turn the running sums into NaN.
    dtype = jnp.promote_types(logits_BHLM.dtype, jnp.float32)  # float64 when given
    x_BHLM = jnp.where(allowed_BLM[:, None], logits_BHLM.astype(dtype) / 2, -1e4)
    x_BHLM = x_BHLM - jax.lax.stop_gradient(jnp.max(x_BHLM, axis=-1, keepdims=True))
    sorted_BHLM = -jnp.sort(-x_BHLM, axis=-1)
    k_M = jnp.arange(1, x_BHLM.shape[-1] + 1, dtype=dtype)[None, None, None]
    mean_BHLM = jnp.cumsum(sorted_BHLM, axis=-1) / k_M
    mean_sq_BHLM = jnp.cumsum(sorted_BHLM * sorted_BHLM, axis=-1) / k_M
    delta_BHLM = (1 - k_M * (mean_sq_BHLM - mean_BHLM * mean_BHLM)) / k_M
    # sqrt only where delta > 0: at 0 its derivative is infinite, and 0 * inf would turn the
    # (zero) cotangent of every unchosen support size into NaN.
    positive_BHLM = delta_BHLM > 0
    root_BHLM = jnp.where(positive_BHLM, jnp.sqrt(jnp.where(positive_BHLM, delta_BHLM, 1.0)), 0.0)
    tau_BHLM = mean_BHLM - root_BHLM
    support_BHL1 = jnp.sum(tau_BHLM <= sorted_BHLM, axis=-1, keepdims=True)
    tau_BHL1 = jnp.take_along_axis(tau_BHLM, support_BHL1 - 1, axis=-1)
    probs_BHLM = jnp.square(jnp.maximum(x_BHLM - tau_BHL1, 0.0))
    return jnp.where(allowed_BLM[:, None], probs_BHLM, 0.0)


NORMALIZATIONS = {
    "softmax": softmax,
    "stick_breaking": stick_breaking,
    "ssmax": ssmax,
    "entmax15": entmax15,
}
"""ModelConfig.normalization -> its function."""


def init_params(normalization: str, num_heads: int) -> dict[str, jax.Array]:
    """The learned parameters of `normalization` in one attention layer, at their initial values
    (drawn from no key, so adding them leaves every other parameter's draw as it was)."""
    if normalization == "ssmax":
        return {"scale_H": jnp.ones((num_heads,))}
    return {}
