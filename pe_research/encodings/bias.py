"""Relative encodings that add a bias to the attention logits (the `bias` hook).

Every bias here is a function of key position minus query position, computed in float32 and
returned broadcastable to logits_BHLM. The model adds it after scaling q.k by head_dim**-0.5
(T5 with scaled=False undoes that scaling in its rotate hook).
FIRE and Transformer-XL, whose biases are learned functions, are in learned_bias.py.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import jax
import jax.numpy as jnp

from pe_research.encodings.base import Dims, Encoding, Params


def alibi_slopes(num_heads: int) -> jax.Array:
    """Head slopes of Press et al. (2022), ALiBi, as float32 slopes_H.

    For n heads with n a power of two: the geometric sequence starting at and multiplied by
    2^(-8/n). Otherwise the slopes of the closest smaller power of two m, followed by every other
    slope of 2m heads, up to n in total (the rule of the authors' reference code).
    """
    if num_heads < 1:
        raise ValueError(f"alibi_slopes needs num_heads >= 1, got {num_heads}.")

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    m = 2 ** math.floor(math.log2(num_heads))
    slopes = power_of_two(m) + power_of_two(2 * m)[0::2][: num_heads - m]
    return jnp.asarray(slopes, jnp.float32)


def relative_distance_BLM(qpos_BL: jax.Array, kpos_BM: jax.Array) -> jax.Array:
    """Key position minus query position, as float32 (negative for keys in the past)."""
    return kpos_BM.astype(jnp.float32)[:, None, :] - qpos_BL.astype(jnp.float32)[:, :, None]


def heads_first(x_BLMH: jax.Array) -> jax.Array:
    return jnp.transpose(x_BLMH, (0, 3, 1, 2))


@dataclasses.dataclass(frozen=True)
class ALiBi(Encoding):
    """Attention with linear biases (Press et al., 2022): logits += -slope_h * |m - n|.

    Under a causal mask this is exactly the paper's -slope * (query - key); without one it is the
    symmetric bidirectional variant. No embedding or rotation.
    """

    name = "alibi"

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        slopes_H = alibi_slopes(q_BLHK.shape[2])
        dist_BLM = jnp.abs(relative_distance_BLM(qpos_BL, kpos_BM))
        return -slopes_H[None, :, None, None] * dist_BLM[:, None, :, :]


# -- T5 ------------------------------------------------------------------------------------------


def t5_relative_bucket(
    relative_position: jax.Array,
    *,
    bidirectional: bool,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> jax.Array:
    """T5's bucket (Raffel et al., 2020) of relative_position = key position - query position.

    Bidirectional: keys after the query use the upper half of the buckets, the rest the lower
    half. Unidirectional: keys after the query share bucket 0 with distance 0. Within the E
    buckets of a direction, distances below E/2 get a bucket each; larger ones are log-spaced up
    to `max_distance`, and everything beyond falls in the last bucket. int32, all < num_buckets.
    """
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    max_exact = per_direction // 2
    if max_exact < 1 or max_distance <= max_exact:
        scheme = "bidirectional" if bidirectional else "unidirectional"
        raise ValueError(
            f"the {scheme} T5 scheme with num_buckets={num_buckets} has {max_exact} exact "
            f"buckets per direction; it needs at least 1 and fewer than max_distance="
            f"{max_distance}: use num_buckets >= {4 if bidirectional else 2} and max_distance > "
            f"{max(max_exact, 1)}."
        )
    rel = jnp.asarray(relative_position, jnp.int32)
    if bidirectional:
        offset = jnp.where(rel > 0, per_direction, 0)
        n = jnp.abs(rel)
    else:
        offset = jnp.zeros_like(rel)
        n = jnp.maximum(-rel, 0)
    # The same float32 operations, in the same order, as the reference code: bucket edges at
    # exact powers then fall on the same side.
    n_large = jnp.maximum(n, max_exact).astype(jnp.float32)
    log_frac = jnp.log(n_large / max_exact) / math.log(max_distance / max_exact)
    large = max_exact + (log_frac * (per_direction - max_exact)).astype(jnp.int32)
    large = jnp.minimum(large, per_direction - 1)  # part of the scheme: the far-distance bucket
    return (offset + jnp.where(n < max_exact, n, large)).astype(jnp.int32)


_T5_CAUSAL_TABLE = "table_NH"
_T5_BIDIRECTIONAL_TABLE = "bidirectional_table_NH"


@dataclasses.dataclass(frozen=True)
class T5Bias(Encoding):
    """A learned scalar per head and relative-position bucket (Raffel et al., 2020, T5).

    Buckets by `t5_relative_bucket`. The scheme follows the model: a causal model gets the
    unidirectional scheme, a bidirectional one the scheme with half the buckets per direction.
    The bias hook does not see `Dims`, so the init hook records the choice in the name of the
    table (`table_NH` vs `bidirectional_table_NH`).

    Two conventions, each an option:
    - `shared`: False (our default): each layer learns its own table, like every other per-layer
      encoding. True: one table, made by `init_embed` and read by every layer's bias hook (the
      model hands attention hooks the top-level parameters; encodings/base.py), as T5 computes
      the bias in its first layer and passes it to the others (transformers' T5Stack;
      Kazemnejad et al.'s decoder, McGill-NLP/length-generalization,
      src/models/custom_t5_decoder_only.py: `has_relative_attention_bias=bool(i == 0)`).
    - `scaled`: True (our default): the bias adds to the model's logits q.k / sqrt(head_dim).
      False: to the unscaled q.k, as in T5, whose attention never divides by sqrt(d_kv) (the same
      file, CustomT5Attention: `scores = matmul(q, k^T)`). The `rotate` hook multiplies q by
      sqrt(head_dim), which the model's scaling then cancels. T5 instead initialises W_q with
      std (d_model d_kv)^-0.5 ("Mesh TensorFlow initialization"), so its unscaled logits start
      at the size of scaled ones; here W_q keeps the model's initialisation and the unscaled
      logits start sqrt(head_dim) larger. The model's `qk_scale='init'` is T5's form for every
      encoding (unscaled q.k, W_q drawn that much smaller); with it, `scaled=True` adds the bias
      to unscaled logits and `scaled=False` is refused.
    Kazemnejad et al.'s T5 is `t5(shared=True, scaled=False)` under the model's default
    qk_scale, and `t5(shared=True)` under qk_scale='init'.
    """

    name = "t5"
    learned = True
    needs_increasing_positions = True
    num_buckets: int = 32
    max_distance: int = 128
    shared: bool = False
    scaled: bool = True

    def check(self, dims: Dims, max_position: int) -> None:
        for option in ("shared", "scaled"):
            if not isinstance(getattr(self, option), bool):
                raise ValueError(
                    f"t5 {option} must be true or false, got {getattr(self, option)!r}."
                )
        if not self.scaled and not dims.logits_scaled:
            raise ValueError(
                "t5 scaled=False undoes the model's 1/sqrt(head_dim), but with model qk_scale "
                "'init' the model leaves q.k unscaled already: use t5 with scaled=True (the "
                "default), whose bias then adds to unscaled logits, as in T5."
            )
        t5_relative_bucket(
            jnp.zeros((), jnp.int32),
            bidirectional=not dims.causal,
            num_buckets=self.num_buckets,
            max_distance=self.max_distance,
        )

    def _table(self, key: jax.Array, dims: Dims) -> Params:
        table = jax.random.normal(key, (self.num_buckets, dims.num_heads)) * dims.d_model**-0.5
        return {_T5_CAUSAL_TABLE if dims.causal else _T5_BIDIRECTIONAL_TABLE: table}

    def init_embed(self, key: jax.Array, dims: Dims) -> Params:
        return self._table(key, dims) if self.shared else {}

    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        return {} if self.shared else self._table(key, dims)

    def rotate(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        if self.scaled:
            return q_BLHK, k_BMHK
        # The model divides q.k by sqrt(K); multiplying q by it first leaves q.k unscaled.
        return (q_BLHK * math.sqrt(q_BLHK.shape[-1])).astype(q_BLHK.dtype), k_BMHK

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        bidirectional = _T5_BIDIRECTIONAL_TABLE in params
        table_NH = params[_T5_BIDIRECTIONAL_TABLE if bidirectional else _T5_CAUSAL_TABLE]
        rel_BLM = kpos_BM.astype(jnp.int32)[:, None, :] - qpos_BL.astype(jnp.int32)[:, :, None]
        bucket_BLM = t5_relative_bucket(
            rel_BLM,
            bidirectional=bidirectional,
            num_buckets=self.num_buckets,
            max_distance=self.max_distance,
        )
        # In range by construction; a table of the wrong size would read NaN, not a clamped row.
        bias_BLMH = jnp.take(
            table_NH.astype(jnp.float32), bucket_BLM, axis=0, mode="fill", fill_value=jnp.nan
        )
        return heads_first(bias_BLMH)


# -- Kerple --------------------------------------------------------------------------------------


def _inverse_softplus(y: jax.Array) -> jax.Array:
    return y + jnp.log(-jnp.expm1(-y))


@dataclasses.dataclass(frozen=True)
class Kerple(Encoding):
    """Kernelized relative positional embedding (Chi et al., 2022, KERPLE), per head h:

    log:   logits += -r1_h * log(1 + r2_h * |m - n|)
    power: logits += -r1_h * |m - n| ** r2_h,  with r2_h <= 2

    The paper's code keeps r1, r2 >= 1e-2 (and the power exponent <= 2) by clamping the
    parameters in place at every step. Hooks are pure and cannot do that, so we reparameterize
    (our choice, same bounds): r = eps + softplus(raw), and for the power exponent
    r2 = eps + (2 - eps) * sigmoid(raw). Initial values follow the paper's code: uniform on (0, 2)
    for the log kernel's r1 and the power exponent, on (0, 1) for the others. |m - n| gives the
    paper's kernel under a causal mask and the symmetric variant without one.
    """

    name = "kerple"
    learned = True
    variant: Literal["log", "power"] = "log"
    eps: float = 1e-2

    def check(self, dims: Dims, max_position: int) -> None:
        if self.variant not in ("log", "power"):
            raise ValueError(f"Unknown kerple variant {self.variant!r}; choose 'log' or 'power'.")
        if not 0.0 < self.eps < 1.0:
            raise ValueError(f"kerple eps must be in (0, 1), got {self.eps}.")

    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        k1, k2 = jax.random.split(key)
        H, eps = dims.num_heads, self.eps
        top1, top2 = (2.0, 1.0) if self.variant == "log" else (1.0, 2.0)
        # Bounded away from the limits so that the inverse parameterization stays finite.
        r1_H = jax.random.uniform(k1, (H,), minval=2 * eps, maxval=top1)
        r2_H = jax.random.uniform(k2, (H,), minval=2 * eps, maxval=top2 - eps)
        if self.variant == "log":
            raw2_H = _inverse_softplus(r2_H - eps)
        else:
            raw2_H = jax.scipy.special.logit((r2_H - eps) / (2.0 - eps))
        return {"r1_raw_H": _inverse_softplus(r1_H - eps), "r2_raw_H": raw2_H}

    def coefficients(self, params: Params) -> tuple[jax.Array, jax.Array]:
        """The positive (r1_H, r2_H) of the kernel, float32."""
        raw1_H = params["r1_raw_H"].astype(jnp.float32)
        raw2_H = params["r2_raw_H"].astype(jnp.float32)
        r1_H = self.eps + jax.nn.softplus(raw1_H)
        if self.variant == "log":
            return r1_H, self.eps + jax.nn.softplus(raw2_H)
        return r1_H, self.eps + (2.0 - self.eps) * jax.nn.sigmoid(raw2_H)

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        r1_H, r2_H = self.coefficients(params)
        r1, r2 = r1_H[None, :, None, None], r2_H[None, :, None, None]
        d_B1LM = jnp.abs(relative_distance_BLM(qpos_BL, kpos_BM))[:, None]
        if self.variant == "log":
            return -r1 * jnp.log1p(r2 * d_B1LM)
        # exp(r2 * log d) with d = 0 kept out of the log, so the gradient in r2 stays finite.
        positive = d_B1LM > 0
        power = jnp.exp(r2 * jnp.log(jnp.where(positive, d_B1LM, 1.0)))
        return -r1 * jnp.where(positive, power, 0.0)
