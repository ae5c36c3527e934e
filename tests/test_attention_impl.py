"""ModelConfig.attention: jax.nn.dot_product_attention gives the numbers of the einsum path."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pe_research import encodings
from pe_research import model as model_lib
from pe_research.config import ModelConfig, RunConfig
from pe_research.model import Transformer

CFG = ModelConfig(num_layers=2, d_model=32, num_heads=2, mlp_dim=64, attention="einsum")
VOCAB = 12
B, L = 3, 10
TOKENS_BL = jax.random.randint(jax.random.key(0), (B, L), 0, VOCAB)
# Padding after the real tokens (as batches are built), a different amount per sequence.
VALID_BL = jnp.arange(L)[None] < jnp.array([[L], [7], [4]])
POS_BL = jnp.where(VALID_BL, jnp.arange(L)[None], 0)


def positions_for(enc):
    if enc.position_axes is None:
        return POS_BL
    return jnp.repeat(POS_BL[..., None], enc.position_axes, axis=-1)


def both_logits(cfg, enc):
    """Logits of the einsum and dot_product paths from the same parameters, in one program."""
    models = [
        Transformer(dataclasses.replace(cfg, attention=a), enc, VOCAB, rngs=nnx.Rngs(0))
        for a in ("einsum", "dot_product")
    ]
    (g_einsum, params), (g_dot, _) = (nnx.split(m) for m in models)

    @jax.jit
    def forward(params, tokens_BL, pos_BL, valid_BL):
        return tuple(nnx.merge(g, params)(tokens_BL, pos_BL, valid_BL) for g in (g_einsum, g_dot))

    return forward(params, TOKENS_BL, positions_for(enc), VALID_BL)


def cases():
    """Every registered encoding, causal and bidirectional where the encoding allows it."""
    for name in encodings.names():
        for causal in (True, False):
            try:
                encodings.get(name).check(dataclasses.replace(CFG, causal=causal).dims(), L)
            except ValueError:  # cope is defined for causal decoders only
                continue
            yield pytest.param(name, causal, id=f"{name}-{'causal' if causal else 'encoder'}")


@pytest.mark.parametrize(("name", "causal"), list(cases()))
def test_dot_product_attention_equals_einsum(name, causal, monkeypatch):
    calls = []
    dot_product_attention = jax.nn.dot_product_attention

    def spy(*args, **kwargs):
        calls.append(kwargs["bias"].dtype)
        return dot_product_attention(*args, **kwargs)

    monkeypatch.setattr(jax.nn, "dot_product_attention", spy)
    enc = encodings.get(name, **({"init_std": 0.5} if name in ("learned", "cope") else {}))
    einsum, dot = both_logits(dataclasses.replace(CFG, causal=causal), enc)
    assert calls == [jnp.float32] * CFG.num_layers  # the dot_product model, and only it
    assert bool(jnp.isfinite(dot).all())
    np.testing.assert_allclose(dot, einsum, atol=1e-5, rtol=1e-5)


def test_dot_product_attention_in_bf16_tracks_einsum():
    """bf16 operands, float32 logits and softmax in both paths: the same up to bf16 rounding."""
    cfg = dataclasses.replace(CFG, compute_dtype="bfloat16")
    einsum, dot = both_logits(cfg, encodings.get("alibi"))
    np.testing.assert_allclose(dot, einsum, atol=2e-2)


def test_auto_is_dot_product_on_gpu_only(monkeypatch):
    assert jax.default_backend() == "cpu"
    assert not model_lib.use_dot_product("auto") and not model_lib.use_dot_product("einsum")
    assert model_lib.use_dot_product("dot_product")
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert model_lib.use_dot_product("auto") and not model_lib.use_dot_product("einsum")


def test_capture_uses_einsum_under_dot_product():
    """Analysis needs the probabilities, which only the einsum path has."""
    model = Transformer(
        dataclasses.replace(CFG, attention="dot_product"),
        encodings.get("rope"),
        VOCAB,
        rngs=nnx.Rngs(0),
    )
    logits = model(TOKENS_BL, POS_BL, VALID_BL)
    model.set_attributes(capture_attention=True)
    captured, sown = nnx.capture(model, nnx.Intermediate)(TOKENS_BL, POS_BL, VALID_BL)
    sown = nnx.to_pure_dict(sown)
    (probs_BHLM,) = sown["blocks"][0]["attn"][model_lib.PROBS]
    assert probs_BHLM.shape == (B, CFG.num_heads, L, L)
    valid = np.asarray(VALID_BL)
    np.testing.assert_allclose(captured[valid], logits[valid], atol=1e-5, rtol=1e-5)


def test_unsupported_attention_names_the_option_and_the_choices():
    with pytest.raises(ValueError, match=r"--model\.attention to one of auto, einsum, dot_product"):
        ModelConfig(attention="flash").check()
    base = RunConfig()
    assert "attention" not in base.identity()["model"]
    dot = dataclasses.replace(base, model=dataclasses.replace(base.model, attention="dot_product"))
    assert dot.to_dict()["model"]["attention"] == "dot_product"
    assert RunConfig.from_dict(dot.to_dict()) == dot
