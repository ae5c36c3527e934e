"""A small transformer in Flax NNX that any encoding plugs into (pre-LayerNorm and a GELU MLP by
default; RMSNorm, pre+post or post norm, ReLU and GeGLU are options of ModelConfig).

The model holds its encoding as a static attribute and calls every hook (embed, rotate, bias)
unconditionally; it never asks which encoding it has. Attention layer i holds the encoding's
`for_layer(i, num_layers)`: the encoding itself, or a per-layer mixture's member for layer i.
Attention hooks receive the layer's own parameters merged with the top-level ones (init_embed),
so one table can serve every layer (T5's shared bias). Positions are an explicit input.
Attention logits, softmax and output logits are float32. Dropout (`ModelConfig.dropout`) acts
only in a call given a `dropout_key` (the training step's); evaluation passes none.

Mixed precision (`compute_dtype="bfloat16"`): parameters and the residual stream stay float32
(so do LayerNorm and the encodings' angles and biases); activations and weights are cast to
bfloat16 at each matmul. With the default float32 every cast is a no-op.

For analysis, `model.set_attributes(capture_attention=True)` makes every layer compute attention
in one call and sow (`nnx.Intermediate`, recorded by `nnx.capture`) its probabilities and its q, k
before the encoding's rotation, as Flax's Gemma example sows attention weights.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
from flax import nnx

from pe_research import normalizations
from pe_research.config import ModelConfig
from pe_research.encodings import Encoding


def _params(values: dict[str, jax.Array]) -> nnx.Dict:
    return nnx.Dict({name: nnx.Param(value) for name, value in values.items()})


def _read(params: nnx.Dict) -> dict[str, jax.Array]:
    # Params only: while nnx.capture records (flax 0.12.8), every nnx.Dict also holds a
    # `__captures__` entry.
    return {name: value[...] for name, value in params.items() if isinstance(value, nnx.Param)}


def _dense(
    x_ND: jax.Array,
    w_DF: jax.Array,
    b_F: jax.Array | None = None,
    *,
    dtype: str,
    out_dtype: str | None = None,
) -> jax.Array:
    """x @ w (+ b) over the last axis, as one 2-D matmul over all tokens (x_ND, or any leading
    axes, flattened): on CPU about 25% faster than the same product with batch axes left in
    (measured on the MLP of d_model 128).

    Operands are cast to `dtype`; the result has `out_dtype` (default `dtype`)."""
    lead, D = x_ND.shape[:-1], x_ND.shape[-1]
    x_ND, w_DF = x_ND.reshape(-1, D).astype(dtype), w_DF.astype(dtype)
    y_NF = jnp.matmul(x_ND, w_DF, preferred_element_type=out_dtype)
    if b_F is not None:
        y_NF = y_NF + b_F.astype(y_NF.dtype)[None]
    return y_NF.reshape(*lead, -1)


def dropout(x: jax.Array, rate: float, key: jax.Array | None) -> jax.Array:
    """x with each entry zeroed with probability `rate` and the others scaled by 1 / (1 - rate)
    (inverted dropout: the expectation is x); x itself when `key` is None (evaluation) or the
    rate is 0."""
    if key is None or not rate:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0).astype(x.dtype)


def _fold(key: jax.Array | None, i: int) -> jax.Array | None:
    return None if key is None else jax.random.fold_in(key, i)


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
        # T5 drops attention weights; the residual sites do not.
        self.weights_dropout = cfg.dropout if cfg.dropout_sites == "t5" else 0.0
        self.w_qkv_D3HK = _normal(rngs, (D, 3, H, K), D)
        # qk_scale 'init': 1/sqrt(K) moves from the logits into W_q's starting values.
        self.logit_scale = K**-0.5 if cfg.qk_scale == "logits" else 1.0
        if cfg.qk_scale == "init":
            self.w_qkv_D3HK = nnx.Param(self.w_qkv_D3HK[...].at[:, 0].multiply(K**-0.5))
        self.w_out_HKD = _normal(rngs, (H, K, D), H * K)
        self.pe = _params(encoding.init_layer(rngs.params(), cfg.dims()))
        # The normalization's own learned parameters (ssmax's scales; none for the others):
        # initialised without drawing a key, so the other parameters are drawn as before.
        self.norm = _params(normalizations.init_params(cfg.normalization, H))
        # Sowing from inside attend_in_chunks (lax.map + checkpoint) would leak tracers, so
        # capture is a switch for analysis: on, attention runs in one call and is recorded.
        self.capture_attention = False

    def __call__(
        self,
        x_BLD: jax.Array,
        pos_BL: jax.Array,
        valid_BL: jax.Array,
        shared: dict[str, jax.Array] | None = None,
        dropout_key: jax.Array | None = None,
    ) -> jax.Array:
        groups = [(pos_BL, valid_BL)]
        return self.ragged(x_BLD, groups, shared, dropout_key).reshape(x_BLD.shape)

    def ragged(
        self,
        x_ND: jax.Array,
        groups: list[tuple[jax.Array, jax.Array]],
        shared: dict[str, jax.Array] | None = None,
        dropout_key: jax.Array | None = None,
    ) -> jax.Array:
        """Attention over several batches of different widths whose tokens are the rows of x_ND
        (group after group, each [B, L] row-major): the projections run once over all tokens,
        attention and the hooks within each group, given its (pos_BL, valid_BL).

        `shared`: the top-level encoding parameters (init_embed), read by the hooks beside the
        layer's own (the model checks that their names do not clash). `dropout_key`: in
        training, the key of this layer's attention-weight dropout (`ModelConfig.dropout_sites`
        't5'); None in evaluation."""
        pe, norm = {**(shared or {}), **_read(self.pe)}, _read(self.norm)
        D = x_ND.shape[-1]
        w_qkv_D3HK = self.w_qkv_D3HK[...]
        qkv_NX = _dense(x_ND, w_qkv_D3HK.reshape(D, -1), dtype=self.compute_dtype)
        qkv_NX = qkv_NX.reshape(-1, qkv_NX.shape[-1])
        # One split, not a slice per group: the gradient of a split is one concatenate, while
        # the gradients of G slices are G zero-padded copies summed (on CPU, 8 buckets of the
        # peer's model spent about 8% of the step there).
        ends = list(itertools.accumulate(v.shape[0] * v.shape[1] for _, v in groups))
        qkv_GX = jnp.split(qkv_NX, ends[:-1])  # G pieces of the token axis
        outs = []
        for g, ((pos_BL, valid_BL), qkv_TX) in enumerate(zip(groups, qkv_GX, strict=True)):
            B, L = valid_BL.shape
            qkv_BL3HK = qkv_TX.reshape(B, L, *w_qkv_D3HK.shape[1:])
            keys_B = None
            if dropout_key is not None and self.weights_dropout:
                keys_B = jax.random.split(jax.random.fold_in(dropout_key, g), B)
            out_BLHK = self._group(pe, norm, qkv_BL3HK, pos_BL, valid_BL, keys_B)
            outs.append(out_BLHK.reshape(B * L, -1))
        out_NX = outs[0] if len(outs) == 1 else jnp.concatenate(outs)
        return _dense(out_NX, self.w_out_HKD[...].reshape(-1, D), dtype=self.compute_dtype)

    def _group(
        self,
        pe: dict[str, jax.Array],
        norm: dict[str, jax.Array],
        qkv_BL3HK: jax.Array,
        pos_BL: jax.Array,
        valid_BL: jax.Array,
        keys_B: jax.Array | None = None,
    ) -> jax.Array:
        """out_BLHK of one group's attention, from its fused projections; `keys_B`, one key per
        sequence, drops attention weights (training under dropout_sites 't5')."""
        # Split (its gradient is one concatenate), not three slices (three padded copies).
        q_BLHK, k_BMHK, v_BMHK = (x[:, :, 0] for x in jnp.split(qkv_BL3HK, 3, axis=2))
        if self.capture_attention:
            self.sow(nnx.Intermediate, QUERIES, q_BLHK)
            self.sow(nnx.Intermediate, KEYS, k_BMHK)
        q_BLHK, k_BMHK = self.encoding.rotate(pe, q_BLHK, k_BMHK, pos_BL, pos_BL)
        xs = (q_BLHK, k_BMHK, v_BMHK, pos_BL, valid_BL)
        if self.capture_attention:  # the einsum path: only it has the probabilities
            out_BLHK, probs_BHLM = self._attend(pe, norm, *xs)
            self.sow(nnx.Intermediate, PROBS, probs_BHLM)
            return out_BLHK
        if keys_B is not None:  # only the einsum path drops weights
            return attend_in_chunks(lambda *xs_B: self._attend(pe, norm, *xs_B)[0], *xs, keys_B)
        if self.normalization == "softmax" and use_dot_product(self.attention):
            return attend_in_chunks(lambda *xs_B: self._attend_dot_product(pe, *xs_B), *xs)
        return attend_in_chunks(lambda *xs_B: self._attend(pe, norm, *xs_B)[0], *xs)

    def _attend(
        self,
        pe: dict[str, jax.Array],
        norm: dict[str, jax.Array],
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        v_BMHK: jax.Array,
        pos_BL: jax.Array,
        valid_BL: jax.Array,
        keys_B: jax.Array | None = None,
    ) -> tuple[jax.Array, jax.Array]:
        """(out_BLHK, float32 probs_BHLM): attention of rotated q, k (float32 logits, the
        encoding's bias added), normalised by `ModelConfig.normalization`; with `keys_B`, the
        weights that multiply v are dropped, sequence b by its key (probs_BHLM are not)."""
        logits_BHLM = jnp.einsum(
            "BLHK,BMHK->BHLM", q_BLHK, k_BMHK, preferred_element_type=jnp.float32
        )
        bias_BHLM = self.encoding.bias(pe, q_BLHK, k_BMHK, pos_BL, pos_BL)
        logits_BHLM = logits_BHLM * self.logit_scale + bias_BHLM
        L = q_BLHK.shape[1]
        allowed_BLM = jnp.broadcast_to(valid_BL[:, None, :], (q_BLHK.shape[0], L, L))
        if self.causal:
            allowed_BLM = allowed_BLM & jnp.tril(jnp.ones((L, L), bool))[None]
        normalize = normalizations.NORMALIZATIONS[self.normalization]
        probs_BHLM = normalize(logits_BHLM, allowed_BLM, **norm)
        weights_BHLM = probs_BHLM
        if keys_B is not None:
            weights_BHLM = jax.vmap(lambda k, p: dropout(p, self.weights_dropout, k))(
                keys_B, probs_BHLM
            )
        # Heads-major product, then one transpose: on CPU 4x faster than writing BLHK directly.
        out_BHLK = jnp.einsum("BHLM,BMHK->BHLK", weights_BHLM.astype(v_BMHK.dtype), v_BMHK)
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
            scale=self.logit_scale,
            is_causal=self.causal,
            implementation=None,  # XLA's kernel unless JAX picks a fused one (cuDNN) itself
        )


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
    """GELU or ReLU MLP, or GeGLU (`ModelConfig.mlp`), with or without biases (`mlp_bias`)."""

    def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs):
        self.compute_dtype = cfg.compute_dtype
        # T5 drops the hidden activations; the residual sites do not.
        self.hidden_dropout = cfg.dropout if cfg.dropout_sites == "t5" else 0.0
        self.gated = cfg.mlp == "geglu"
        self.activation = jax.nn.relu if cfg.mlp == "relu" else jax.nn.gelu
        self.w_in_DF = _normal(rngs, (cfg.d_model, cfg.mlp_dim), cfg.d_model)
        self.bias = cfg.mlp_bias
        if self.bias:
            self.b_in_F = nnx.Param(jnp.zeros((cfg.mlp_dim,)))
        if self.gated:
            self.w_gate_DF = _normal(rngs, (cfg.d_model, cfg.mlp_dim), cfg.d_model)
        self.w_out_FD = _normal(rngs, (cfg.mlp_dim, cfg.d_model), cfg.mlp_dim)
        if self.bias:
            self.b_out_D = nnx.Param(jnp.zeros((cfg.d_model,)))

    def __call__(self, x_BLD: jax.Array, dropout_key: jax.Array | None = None) -> jax.Array:
        dtype = self.compute_dtype
        b_in_F, b_out_D = (self.b_in_F[...], self.b_out_D[...]) if self.bias else (None, None)
        h_BLF = _dense(x_BLD, self.w_in_DF[...], b_in_F, dtype=dtype)
        if self.gated:
            h_BLF = jax.nn.gelu(_dense(x_BLD, self.w_gate_DF[...], dtype=dtype)) * h_BLF
        else:
            h_BLF = self.activation(h_BLF)
        h_BLF = dropout(h_BLF, self.hidden_dropout, dropout_key)
        return _dense(h_BLF, self.w_out_FD[...], b_out_D, dtype=dtype)


def norm_layer(cfg: ModelConfig, *, rngs: nnx.Rngs) -> nnx.LayerNorm | nnx.RMSNorm:
    """The normalisation `ModelConfig.norm` names (flax defaults: float32 scale, epsilon 1e-6)."""
    if cfg.norm == "rmsnorm":
        return nnx.RMSNorm(cfg.d_model, rngs=rngs)
    return nnx.LayerNorm(cfg.d_model, rngs=rngs)


class Block(nnx.Module):
    def __init__(self, cfg: ModelConfig, encoding: Encoding, *, rngs: nnx.Rngs):
        # norm_attn and norm_mlp sit before their sublayer (pre, pre_post) or after the residual
        # add (post); pre_post adds post_attn and post_mlp after each residual add.
        self.norm_attn = norm_layer(cfg, rngs=rngs)
        self.attn = Attention(cfg, encoding, rngs=rngs)
        self.norm_mlp = norm_layer(cfg, rngs=rngs)
        self.mlp = MLP(cfg, rngs=rngs)
        self.norm_position = cfg.norm_position
        self.dropout = cfg.dropout
        if self.norm_position == "pre_post":
            self.post_attn = norm_layer(cfg, rngs=rngs)
            self.post_mlp = norm_layer(cfg, rngs=rngs)

    def __call__(
        self,
        x_BLD: jax.Array,
        pos_BL: jax.Array,
        valid_BL: jax.Array,
        shared: dict[str, jax.Array] | None = None,
        dropout_key: jax.Array | None = None,
    ) -> jax.Array:
        x_ND = x_BLD.reshape(-1, x_BLD.shape[-1])
        out_ND = self.ragged(x_ND, [(pos_BL, valid_BL)], shared, dropout_key)
        return out_ND.reshape(x_BLD.shape)

    def ragged(
        self,
        x_ND: jax.Array,
        groups: list[tuple[jax.Array, jax.Array]],
        shared: dict[str, jax.Array] | None = None,
        dropout_key: jax.Array | None = None,
    ) -> jax.Array:
        """The block on the tokens of several groups at once (see Attention.ragged). With
        `dropout_key` (training), each sublayer's output is dropped before its residual add, and
        the sublayers drop what `ModelConfig.dropout_sites` says."""
        k = [_fold(dropout_key, i) for i in range(4)]

        def attn(h_ND: jax.Array) -> jax.Array:
            return dropout(self.attn.ragged(h_ND, groups, shared, k[0]), self.dropout, k[1])

        def mlp(h_ND: jax.Array) -> jax.Array:
            return dropout(self.mlp(h_ND, k[2]), self.dropout, k[3])

        if self.norm_position == "post":
            x_ND = self.norm_attn(x_ND + attn(x_ND))
            return self.norm_mlp(x_ND + mlp(x_ND))
        x_ND = x_ND + attn(self.norm_attn(x_ND))
        if self.norm_position == "pre_post":
            x_ND = self.post_attn(x_ND)
        x_ND = x_ND + mlp(self.norm_mlp(x_ND))
        return self.post_mlp(x_ND) if self.norm_position == "pre_post" else x_ND


class Transformer(nnx.Module):
    """tokens_BL, pos_BL[, valid_BL] -> logits_BLV (float32)."""

    def __init__(self, cfg: ModelConfig, encoding: Encoding, vocab_size: int, *, rngs: nnx.Rngs):
        cfg.check()
        # Before any hook is called (for_layer, init_*): the encoding's hyper-parameters and the
        # sizes it needs. The largest position a run feeds is checked by RunConfig.check.
        encoding.check(cfg.dims(), 0)
        self.encoding = encoding
        self.compute_dtype = cfg.compute_dtype
        self.dropout = cfg.dropout
        self.final_dropout = cfg.dropout if cfg.dropout_sites == "t5" else 0.0
        # Unit-variance token embeddings by default: the scale of Vaswani et al.'s sqrt(d_model)
        # rescaling, comparable to the unit-amplitude sinusoids added to them (cfg.embed_std).
        # (x * 1.0 is exact: the default draws the same numbers as before the option existed.)
        embed_VD = jax.random.normal(rngs.params(), (vocab_size, cfg.d_model)) * cfg.embed_std
        self.embed_VD = nnx.Param(embed_VD)
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
        # Post-norm blocks already hand the head a normalised stream.
        self.final_norm = cfg.norm_position != "post"
        if self.final_norm:
            self.norm_out = norm_layer(cfg, rngs=rngs)
        # Tied: no head of its own (and no key drawn for one); logits = (x d^-0.5) E^T.
        self.tie_embeddings = cfg.tie_embeddings
        if not self.tie_embeddings:
            self.w_head_DV = _normal(rngs, (cfg.d_model, vocab_size), cfg.d_model)

    def set_encoding(self, encoding: Encoding) -> None:
        """Hold `encoding` (the same kind, with other values: a packed model's own, possibly
        traced, hyper-parameters) in place of the one the model was built with."""
        self.encoding = encoding
        n = len(self.blocks)
        for i, block in enumerate(self.blocks):
            block.attn.encoding = encoding.for_layer(i, n)

    def __call__(
        self,
        tokens_BL: jax.Array,
        pos_BL: jax.Array,
        valid_BL: jax.Array | None = None,
        dropout_key: jax.Array | None = None,
    ) -> jax.Array:
        logits_NV = self.ragged([(tokens_BL, pos_BL, valid_BL)], dropout_key)
        return logits_NV.reshape(*tokens_BL.shape, -1)

    def ragged(
        self,
        groups: list[tuple[jax.Array, jax.Array, jax.Array | None]],
        dropout_key: jax.Array | None = None,
    ) -> jax.Array:
        """logits_NV (float32) of several batches (tokens_BL, pos_BL, valid_BL) of different
        widths, in one pass: their tokens are the rows, group after group, each row-major.

        Every per-token layer (embedding, LayerNorm, projections, MLP, head) runs once over all
        tokens, attention and the encoding's hooks within each group: length buckets then cost
        one matmul per layer rather than one per bucket, and each token's numbers are those of
        its group run alone (up to float reassociation in the weight gradients).

        `dropout_key`: a key in training (dropout at `ModelConfig.dropout_sites`, at rate
        `ModelConfig.dropout`), None in evaluation.
        """
        shared = _read(self.pe)
        xs, meta = [], []
        for tokens_BL, pos_BL, valid_BL in groups:
            if valid_BL is None:
                valid_BL = jnp.ones(tokens_BL.shape, bool)
            x_BLD = jnp.take(self.embed_VD[...], tokens_BL, axis=0)
            x_BLD = self.encoding.embed(shared, x_BLD, pos_BL)
            xs.append(x_BLD.reshape(-1, x_BLD.shape[-1]))
            meta.append((pos_BL, valid_BL))
        x_ND = xs[0] if len(xs) == 1 else jnp.concatenate(xs)
        x_ND = dropout(x_ND, self.dropout, _fold(dropout_key, 0))
        for i, block in enumerate(self.blocks):
            x_ND = block.ragged(x_ND, meta, shared, _fold(dropout_key, i + 1))
        if self.final_norm:
            x_ND = self.norm_out(x_ND)
        x_ND = dropout(x_ND, self.final_dropout, _fold(dropout_key, len(self.blocks) + 1))
        if self.tie_embeddings:
            x_ND, w_head_DV = x_ND * x_ND.shape[-1] ** -0.5, self.embed_VD[...].T
        else:
            w_head_DV = self.w_head_DV[...]
        # float32 from the matmul's accumulator, not rounded through bfloat16.
        return _dense(x_ND, w_head_DV, dtype=self.compute_dtype, out_dtype="float32")


def abstract_model(
    cfg: ModelConfig, encoding: Encoding, vocab_size: int
) -> tuple[nnx.GraphDef, nnx.State]:
    """The model's graph definition and parameter shapes, without computing any parameters."""
    return nnx.split(
        nnx.eval_shape(lambda: Transformer(cfg, encoding, vocab_size, rngs=nnx.Rngs(0)))
    )
