"""A small pre-LayerNorm transformer in Flax NNX that any encoding plugs into.

The model holds its encoding as a static attribute and calls every hook (embed, rotate, bias)
unconditionally; it never asks which encoding it has. Attention layer i holds the encoding's
`for_layer(i, num_layers)`: the encoding itself, or a per-layer mixture's member for layer i.
Attention hooks receive the layer's own parameters merged with the top-level ones (init_embed),
so one table can serve every layer (T5's shared bias). Positions are an explicit input.
Attention logits, softmax and output logits are float32.

Mixed precision (`compute_dtype="bfloat16"`): parameters and the residual stream stay float32
(so do LayerNorm and the encodings' angles and biases); activations and weights are cast to
bfloat16 at each matmul. With the default float32 every cast is a no-op.

For analysis, `model.set_attributes(capture_attention=True)` makes every layer compute attention
in one call and sow (`nnx.Intermediate`, recorded by `nnx.capture`) its probabilities and its q, k
before the encoding's rotation, as Flax's Gemma example sows attention weights.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from pe_research.config import ModelConfig
from pe_research.encodings import Encoding


def _params(values: dict[str, jax.Array]) -> nnx.Dict:
    return nnx.Dict({name: nnx.Param(value) for name, value in values.items()})


def _read(params: nnx.Dict) -> dict[str, jax.Array]:
    # Params only: while nnx.capture records (flax 0.12.8), every nnx.Dict also holds a
    # `__captures__` entry.
    return {name: value[...] for name, value in params.items() if isinstance(value, nnx.Param)}


def _dense(
    x_BLD: jax.Array,
    w_DF: jax.Array,
    b_F: jax.Array | None = None,
    *,
    dtype: str,
    out_dtype: str | None = None,
) -> jax.Array:
    """x @ w (+ b) over the last axis, as one 2-D matmul over all B*L tokens: on CPU about 25%
    faster than the same product with batch axes left in (measured on the MLP of d_model 128).

    Operands are cast to `dtype`; the result has `out_dtype` (default `dtype`)."""
    B, L, D = x_BLD.shape
    x_ND, w_DF = x_BLD.reshape(B * L, D).astype(dtype), w_DF.astype(dtype)
    y_NF = jnp.matmul(x_ND, w_DF, preferred_element_type=out_dtype)
    if b_F is not None:
        y_NF = y_NF + b_F.astype(y_NF.dtype)[None]
    return y_NF.reshape(B, L, -1)


def _normal(rngs: nnx.Rngs, shape: tuple[int, ...], fan_in: int) -> nnx.Param:
    return nnx.Param(jax.random.normal(rngs.params(), shape) * fan_in**-0.5)


# Names of what each Attention module sows when capture_attention is on.
PROBS = "attention_probs_BHLM"  # float32 softmax over keys; 0 at masked and future keys
QUERIES = "queries_BLHK"  # before the encoding's rotation
KEYS = "keys_BMHK"  # before the encoding's rotation


class Attention(nnx.Module):
    """Multi-head self attention with a fused QKV projection and the encoding's hooks."""

    def __init__(self, cfg: ModelConfig, encoding: Encoding, *, rngs: nnx.Rngs):
        D, H, K = cfg.d_model, cfg.num_heads, cfg.head_dim
        self.encoding = encoding
        self.causal = cfg.causal
        self.compute_dtype = cfg.compute_dtype
        self.attention = cfg.attention
        self.normalization = cfg.normalization
        self.w_qkv_D3HK = _normal(rngs, (D, 3, H, K), D)
        self.w_out_HKD = _normal(rngs, (H, K, D), H * K)
        self.pe = _params(encoding.init_layer(rngs.params(), cfg.dims()))
        # Sowing from inside attend_in_chunks (lax.map + checkpoint) would leak tracers, so
        # capture is a switch for analysis: on, attention runs in one call and is recorded.
        self.capture_attention = False

    def __call__(
        self,
        x_BLD: jax.Array,
        pos_BL: jax.Array,
        valid_BL: jax.Array,
        shared: dict[str, jax.Array] | None = None,
    ) -> jax.Array:
        """`shared`: the top-level encoding parameters (init_embed), read by the hooks beside
        the layer's own (the model checks that their names do not clash)."""
        pe = {**(shared or {}), **_read(self.pe)}
        B, L, D = x_BLD.shape
        w_qkv_D3HK = self.w_qkv_D3HK[...]
        qkv_BLX = _dense(x_BLD, w_qkv_D3HK.reshape(D, -1), dtype=self.compute_dtype)
        qkv_BL3HK = qkv_BLX.reshape(B, L, *w_qkv_D3HK.shape[1:])
        q_BLHK, k_BMHK, v_BMHK = (qkv_BL3HK[:, :, i] for i in range(3))
        if self.capture_attention:
            self.sow(nnx.Intermediate, QUERIES, q_BLHK)
            self.sow(nnx.Intermediate, KEYS, k_BMHK)
        q_BLHK, k_BMHK = self.encoding.rotate(pe, q_BLHK, k_BMHK, pos_BL, pos_BL)
        xs = (q_BLHK, k_BMHK, v_BMHK, pos_BL, valid_BL)
        if self.capture_attention:  # the einsum path: only it has the probabilities
            out_BLHK, probs_BHLM = self._attend(pe, *xs)
            self.sow(nnx.Intermediate, PROBS, probs_BHLM)
        elif self.normalization == "softmax" and use_dot_product(self.attention):
            out_BLHK = attend_in_chunks(lambda *xs_B: self._attend_dot_product(pe, *xs_B), *xs)
        else:
            out_BLHK = attend_in_chunks(lambda *xs_B: self._attend(pe, *xs_B)[0], *xs)
        out_BLX = out_BLHK.reshape(B, L, -1)
        return _dense(out_BLX, self.w_out_HKD[...].reshape(-1, D), dtype=self.compute_dtype)

    def _attend(
        self,
        pe: dict[str, jax.Array],
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        v_BMHK: jax.Array,
        pos_BL: jax.Array,
        valid_BL: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        """(out_BLHK, float32 probs_BHLM): attention of rotated q, k (float32 logits, the
        encoding's bias added), normalised by `ModelConfig.normalization`."""
        scale = q_BLHK.shape[-1] ** -0.5
        logits_BHLM = jnp.einsum(
            "BLHK,BMHK->BHLM", q_BLHK, k_BMHK, preferred_element_type=jnp.float32
        )
        logits_BHLM = logits_BHLM * scale + self.encoding.bias(pe, q_BLHK, k_BMHK, pos_BL, pos_BL)
        L = q_BLHK.shape[1]
        allowed_BLM = jnp.broadcast_to(valid_BL[:, None, :], (q_BLHK.shape[0], L, L))
        if self.causal:
            allowed_BLM = allowed_BLM & jnp.tril(jnp.ones((L, L), bool))[None]
        probs_BHLM = NORMALIZATIONS[self.normalization](logits_BHLM, allowed_BLM)
        # Heads-major product, then one transpose: on CPU 4x faster than writing BLHK directly.
        out_BHLK = jnp.einsum("BHLM,BMHK->BHLK", probs_BHLM.astype(v_BMHK.dtype), v_BMHK)
        return out_BHLK.transpose(0, 2, 1, 3), probs_BHLM

    def _attend_dot_product(
        self,
        pe: dict[str, jax.Array],
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        v_BMHK: jax.Array,
        pos_BL: jax.Array,
        valid_BL: jax.Array,
    ) -> jax.Array:
        """out_BLHK of `_attend`, through jax.nn.dot_product_attention (float32 logits, softmax).

        The bias hook runs first and only adds to the logits, so every encoding fits, including
        those whose bias reads q and k (CoPE's gates sigmoid(q.k), Transformer-XL's content
        terms): they compute their own products inside the hook, at the cost of a second q.k.
        """
        return jax.nn.dot_product_attention(
            q_BLHK,
            k_BMHK,
            v_BMHK,
            # A scalar (the no-op hook) becomes [1, 1, 1, 1]; XLA folds the zero away.
            bias=self.encoding.bias(pe, q_BLHK, k_BMHK, pos_BL, pos_BL),
            mask=valid_BL[:, None, None, :],
            scale=q_BLHK.shape[-1] ** -0.5,
            is_causal=self.causal,
            implementation=None,  # XLA's kernel unless JAX picks a fused one (cuDNN) itself
        )


def softmax(logits_BHLM: jax.Array, allowed_BLM: jax.Array) -> jax.Array:
    """Softmax over the allowed keys (float32)."""
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


# ModelConfig.normalization -> (logits_BHLM, allowed_BLM) -> float32 weights_BHLM.
NORMALIZATIONS = {"softmax": softmax, "stick_breaking": stick_breaking}


def use_dot_product(attention: str) -> bool:
    """Whether `ModelConfig.attention` resolves to jax.nn.dot_product_attention on this backend."""
    # auto: dot_product on GPU, where fused kernels exist; on CPU the chunked einsum is faster.
    return attention == "dot_product" or (attention == "auto" and jax.default_backend() == "gpu")


# Logits and probabilities of this many bytes per chunk stay in a CPU core's cache.
CPU_CHUNK_BYTES = 2 << 20


def attend_in_chunks(attend, *xs_B: jax.Array) -> jax.Array:
    """`attend(*xs_B)`, computed on CPU a few sequences at a time, each chunk rematerialised in
    the backward pass.

    On CPU, attention of short sequences with small heads is bound by memory traffic over the
    [B, H, L, M] logits (several passes each way); computed in chunks that fit in cache, and
    recomputed rather than stored for the gradient, it runs about twice as fast. Each
    sequence's numbers are the same up to float reassociation. Accelerators get one call.
    """
    B, L, H = xs_B[0].shape[:3]
    per_sequence = H * L * L * 4
    if jax.default_backend() != "cpu" or B * per_sequence <= CPU_CHUNK_BYTES:
        return attend(*xs_B)
    target = max(CPU_CHUNK_BYTES // per_sequence, 1)
    chunk = max(c for c in range(1, target + 1) if B % c == 0)
    chunks = [x.reshape(B // chunk, chunk, *x.shape[1:]) for x in xs_B]
    out = jax.lax.map(lambda args: jax.checkpoint(attend)(*args), chunks)
    return out.reshape(B, *out.shape[2:])


class MLP(nnx.Module):
    def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs):
        self.compute_dtype = cfg.compute_dtype
        self.w_in_DF = _normal(rngs, (cfg.d_model, cfg.mlp_dim), cfg.d_model)
        self.b_in_F = nnx.Param(jnp.zeros((cfg.mlp_dim,)))
        self.w_out_FD = _normal(rngs, (cfg.mlp_dim, cfg.d_model), cfg.mlp_dim)
        self.b_out_D = nnx.Param(jnp.zeros((cfg.d_model,)))

    def __call__(self, x_BLD: jax.Array) -> jax.Array:
        dtype = self.compute_dtype
        h_BLF = jax.nn.gelu(_dense(x_BLD, self.w_in_DF[...], self.b_in_F[...], dtype=dtype))
        return _dense(h_BLF, self.w_out_FD[...], self.b_out_D[...], dtype=dtype)


class Block(nnx.Module):
    def __init__(self, cfg: ModelConfig, encoding: Encoding, *, rngs: nnx.Rngs):
        self.norm_attn = nnx.LayerNorm(cfg.d_model, rngs=rngs)
        self.attn = Attention(cfg, encoding, rngs=rngs)
        self.norm_mlp = nnx.LayerNorm(cfg.d_model, rngs=rngs)
        self.mlp = MLP(cfg, rngs=rngs)

    def __call__(
        self,
        x_BLD: jax.Array,
        pos_BL: jax.Array,
        valid_BL: jax.Array,
        shared: dict[str, jax.Array] | None = None,
    ) -> jax.Array:
        x_BLD = x_BLD + self.attn(self.norm_attn(x_BLD), pos_BL, valid_BL, shared)
        return x_BLD + self.mlp(self.norm_mlp(x_BLD))


class Transformer(nnx.Module):
    """tokens_BL, pos_BL[, valid_BL] -> logits_BLV (float32)."""

    def __init__(self, cfg: ModelConfig, encoding: Encoding, vocab_size: int, *, rngs: nnx.Rngs):
        cfg.check()
        # Before any hook is called (for_layer, init_*): the encoding's hyper-parameters and the
        # sizes it needs. The largest position a run feeds is checked by RunConfig.check.
        encoding.check(cfg.dims(), 0)
        self.encoding = encoding
        self.compute_dtype = cfg.compute_dtype
        # Unit-variance token embeddings: the scale of Vaswani et al.'s sqrt(d_model) rescaling,
        # comparable to the unit-amplitude sinusoids added to them.
        self.embed_VD = nnx.Param(jax.random.normal(rngs.params(), (vocab_size, cfg.d_model)))
        self.pe = _params(encoding.init_embed(rngs.params(), cfg.dims()))
        n = cfg.num_layers
        self.blocks = nnx.List([Block(cfg, encoding.for_layer(i, n), rngs=rngs) for i in range(n)])
        for i, block in enumerate(self.blocks):
            if clash := sorted(set(_read(self.pe)) & set(_read(block.attn.pe))):
                raise ValueError(
                    f"encoding {encoding.label()!r} names parameters {clash} both at the top level "
                    f"(init_embed) and in layer {i} (init_layer); attention hooks read both, so "
                    "the names must differ: rename one of them in the encoding."
                )
        self.norm_out = nnx.LayerNorm(cfg.d_model, rngs=rngs)
        self.w_head_DV = _normal(rngs, (cfg.d_model, vocab_size), cfg.d_model)

    def __call__(
        self, tokens_BL: jax.Array, pos_BL: jax.Array, valid_BL: jax.Array | None = None
    ) -> jax.Array:
        if valid_BL is None:
            valid_BL = jnp.ones(tokens_BL.shape, bool)
        x_BLD = jnp.take(self.embed_VD[...], tokens_BL, axis=0)
        shared = _read(self.pe)
        x_BLD = self.encoding.embed(shared, x_BLD, pos_BL)
        for block in self.blocks:
            x_BLD = block(x_BLD, pos_BL, valid_BL, shared)
        x_BLD = self.norm_out(x_BLD)
        # float32 from the matmul's accumulator, not rounded through bfloat16.
        w_head_DV = self.w_head_DV[...]
        return _dense(x_BLD, w_head_DV, dtype=self.compute_dtype, out_dtype="float32")


def abstract_model(
    cfg: ModelConfig, encoding: Encoding, vocab_size: int
) -> tuple[nnx.GraphDef, nnx.State]:
    """The model's graph definition and parameter shapes, without computing any parameters."""
    return nnx.split(
        nnx.eval_shape(lambda: Transformer(cfg, encoding, vocab_size, rngs=nnx.Rngs(0)))
    )
