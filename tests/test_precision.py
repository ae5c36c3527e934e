"""bfloat16 compute (ModelConfig.compute_dtype): bf16 matmuls, float32 everything else."""

import dataclasses
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pe_research import encodings, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.model import Transformer

CFG = ModelConfig(num_layers=2, d_model=32, num_heads=2, mlp_dim=64)
BF16 = dataclasses.replace(CFG, compute_dtype="bfloat16")
VOCAB = 12
B, L = 2, 10
TOKENS_BL = jax.random.randint(jax.random.key(0), (B, L), 0, VOCAB)
POS_BL = jnp.broadcast_to(jnp.arange(L), (B, L))


def forward_fn(cfg, enc):
    """A jitted (params, tokens, pos) -> logits of `cfg`, and params (the same for every cfg)."""
    graphdef, params = nnx.split(Transformer(cfg, enc, VOCAB, rngs=nnx.Rngs(0)))
    return jax.jit(lambda p, t, q: nnx.merge(graphdef, p)(t, q)), params


def positions_for(enc):
    if enc.position_axes is None:
        return POS_BL
    return jnp.repeat(POS_BL[..., None], enc.position_axes, axis=-1)


def dot_types(hlo: str) -> list[tuple[str, str, str]]:
    """(lhs, rhs, result) element types of every dot_general in StableHLO text."""
    pattern = (
        r"stablehlo\.dot_general.*: \(tensor<[^>]*x(\w+)>, tensor<[^>]*x(\w+)>\) -> tensor<([^>]*)>"
    )
    return [(lhs, rhs, result.rsplit("x", 1)[-1]) for lhs, rhs, result in re.findall(pattern, hlo)]


def test_unsupported_compute_dtype_names_the_option_and_the_choices():
    with pytest.raises(ValueError, match=r"--model\.compute-dtype to one of float32, bfloat16"):
        ModelConfig(compute_dtype="float16").check()
    with pytest.raises(ValueError, match="compute-dtype"):
        Transformer(
            ModelConfig(compute_dtype="fp8"), encodings.get("rope"), VOCAB, rngs=nnx.Rngs(0)
        )
    BF16.check()


def test_compute_dtype_is_left_out_of_the_run_id_at_its_default():
    """Run ids (a hash of identity()) made before the option keep their value."""
    base = RunConfig(model=CFG)
    assert "compute_dtype" not in base.identity()["model"]
    bf16 = dataclasses.replace(base, model=BF16)
    assert bf16.to_dict()["model"]["compute_dtype"] == "bfloat16"
    for cfg in (base, bf16):
        assert RunConfig.from_dict(cfg.to_dict()) == cfg
    d = bf16.to_dict()
    d["model"]["compute_dtype"] = "float16"
    with pytest.raises(ValueError, match="compute_dtype must be one of"):
        RunConfig.from_dict(d)


@pytest.mark.parametrize("name", ["rope", "alibi", "sinusoidal"])
def test_bf16_forward_runs_every_matmul_in_bf16(name):
    """All dots take bf16 operands; attention logits and output logits come out float32; the
    float32 program has no bf16 at all."""
    enc = encodings.get(name)
    fwd32, params = forward_fn(CFG, enc)
    fwd16, _ = forward_fn(BF16, enc)
    args = (params, TOKENS_BL, positions_for(enc))
    assert "bf16" not in fwd32.lower(*args).as_text()
    dots = dot_types(fwd16.lower(*args).as_text())
    # Per layer QKV, q.k, p.v, output projection, two MLP matmuls; then the head.
    assert len(dots) == 6 * CFG.num_layers + 1, dots
    assert all(lhs == rhs == "bf16" for lhs, rhs, _ in dots), dots
    results = [r for _, _, r in dots]
    assert results.count("f32") == CFG.num_layers + 1, dots  # q.k logits and the head
    assert fwd16(*args).dtype == jnp.float32


@pytest.mark.parametrize("name", encodings.names())
def test_bf16_logits_track_float32_and_encodings_keep_bf16(name, monkeypatch):
    """Same parameters, bf16 compute: logits within 0.1 of float32 (bf16 keeps ~3 significant
    digits); rotate gets bf16 q, k and returns bf16, bias returns float32."""
    enc = encodings.get(name)
    seen = []

    def spy(cls):
        rotate, bias = cls.rotate, cls.bias

        def spy_rotate(self, params, q, k, qpos, kpos):
            out = rotate(self, params, q, k, qpos, kpos)
            seen.append(("rotate", q.dtype, k.dtype, out[0].dtype, out[1].dtype))
            return out

        def spy_bias(self, params, q, k, qpos, kpos):
            out = bias(self, params, q, k, qpos, kpos)
            seen.append(("bias", q.dtype, k.dtype, out.dtype))
            return out

        monkeypatch.setattr(cls, "rotate", spy_rotate)
        monkeypatch.setattr(cls, "bias", spy_bias)

    # The hooks the model calls are those of each layer's encoding (a mixture's members).
    n = CFG.num_layers
    for cls in {type(enc.for_layer(i, n)) for i in range(n)}:
        spy(cls)
    enc = encodings.get(name, **({"init_std": 0.5} if name in ("learned", "cope") else {}))
    fwd32, params = forward_fn(CFG, enc)
    fwd16, _ = forward_fn(BF16, enc)
    args = (params, TOKENS_BL, positions_for(enc))
    logits32 = fwd32(*args)
    seen.clear()
    logits16 = fwd16(*args)
    bf16, f32 = jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float32)
    assert ("rotate", bf16, bf16, bf16, bf16) in seen and ("bias", bf16, bf16, f32) in seen, seen
    assert all(s in {("rotate", bf16, bf16, bf16, bf16), ("bias", bf16, bf16, f32)} for s in seen)
    assert logits16.dtype == jnp.float32 and bool(jnp.isfinite(logits16).all())
    diff = float(jnp.max(jnp.abs(logits16 - logits32)))
    assert 0 < diff < 0.1, diff


TINY = RunConfig(
    task=tasks.get("copy", alphabet=8),
    encoding=encodings.get("rope"),
    model=ModelConfig(num_layers=1, d_model=32, num_heads=2, mlp_dim=64),
    train=TrainConfig(steps=60, batch_size=16, train_length=6, warmup_steps=10, log_every=60),
    eval=EvalConfig(lengths=(6,), batch_size=8),
)


def train_losses(cfg):
    keys = train.keys_from_seed(cfg.seed)
    graphdef, state = train.init_state(cfg, keys)
    step = train.make_train_step(cfg, graphdef)
    losses = []
    for _ in range(cfg.train.steps):
        state, metrics = step(state, keys.data, keys.positions)
        losses.append(float(metrics["loss"]))
    return np.array(losses), state


def test_bf16_training_tracks_float32():
    """60 steps from the same init and data: bf16 takes its own path (the losses differ) but
    ends within 0.1 (or 10%) of float32; parameters and optimizer state stay float32."""
    losses32, _ = train_losses(TINY)
    bf16 = dataclasses.replace(TINY.model, compute_dtype="bfloat16")
    losses16, state16 = train_losses(dataclasses.replace(TINY, model=bf16))
    assert np.isfinite(losses16).all() and np.isfinite(losses32).all()
    assert not np.array_equal(losses16, losses32)
    assert losses32[-5:].mean() < 0.8 * losses32[:5].mean()  # float32 learns something here
    final32, final16 = losses32[-5:].mean(), losses16[-5:].mean()
    assert abs(final16 - final32) <= max(0.1, 0.1 * final32), (final16, final32)
    leaves = jax.tree.leaves((state16.params, state16.opt_state))
    assert {x.dtype for x in leaves if jnp.issubdtype(x.dtype, jnp.floating)} == {
        jnp.dtype(jnp.float32)
    }
