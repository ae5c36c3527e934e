"""Per-layer mixtures of encodings (RoPE/NoPE hybrids): one member is that member, the layers get
their pattern, configs round-trip, and the errors name what to mix instead (a shared table among
them)."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pe_research import encodings
from pe_research.config import ModelConfig, RunConfig
from pe_research.encodings import Mixture, NoPE, RNoPE, RoPE
from pe_research.encodings.base import Dims
from pe_research.encodings.mixture import LayerMixture
from pe_research.model import Transformer

CFG = ModelConfig(num_layers=2, d_model=32, num_heads=2, mlp_dim=64)
DIMS = CFG.dims()
VOCAB, B, L = 12, 2, 9
TINY = ModelConfig(num_layers=3, d_model=16, num_heads=2, mlp_dim=32)


def forward(enc):
    """Logits of the model with `enc` (seed 0), run under jit."""
    model = Transformer(CFG, enc, VOCAB, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(model)
    tokens_BL = jax.random.randint(jax.random.key(1), (B, L), 0, VOCAB)
    pos_BL = jnp.broadcast_to(jnp.arange(L, dtype=jnp.int32), (B, L))
    run = jax.jit(lambda state: nnx.merge(graphdef, state)(tokens_BL, pos_BL))
    return np.asarray(run(state))


def test_mixtures_of_one_member_equal_that_member():
    np.testing.assert_array_equal(forward(Mixture(pattern=("rope", "rope"))), forward(RoPE()))
    np.testing.assert_array_equal(forward(Mixture(pattern=("nope",))), forward(NoPE()))
    np.testing.assert_array_equal(forward(RNoPE(nope_every=1)), forward(NoPE()))
    mixed = forward(Mixture(pattern=("rope", "nope")))
    assert not np.allclose(mixed, forward(RoPE())) and not np.allclose(mixed, forward(NoPE()))


def test_layer_assignment():
    cfg = dataclasses.replace(CFG, num_layers=8)
    model = nnx.eval_shape(lambda: Transformer(cfg, RNoPE(base=500.0), VOCAB, rngs=nnx.Rngs(0)))
    assert [b.attn.encoding for b in model.blocks] == [RoPE(base=500.0)] * 3 + [NoPE()] + [
        RoPE(base=500.0)
    ] * 3 + [NoPE()]
    assert model.encoding == RNoPE(base=500.0)  # the embedding hooks stay the top-level one's
    mix = Mixture(pattern=("rope", "alibi", "nope"))
    cfg5 = dataclasses.replace(CFG, num_layers=5)
    model = nnx.eval_shape(lambda: Transformer(cfg5, mix, VOCAB, rngs=nnx.Rngs(0)))
    assert [b.attn.encoding.name for b in model.blocks] == [
        "rope",
        "alibi",
        "nope",
        "rope",
        "alibi",
    ]
    assert mix.members() == (RoPE(), encodings.ALiBi(), NoPE())
    # Hooks called on the mixture itself (a single layer probed alone) are its layer-0 member's.
    q = jax.random.normal(jax.random.key(0), (1, 4, 2, 8))
    pos = jnp.arange(4)[None]
    for a, b in zip(mix.rotate({}, q, q, pos, pos), RoPE().rotate({}, q, q, pos, pos), strict=True):
        np.testing.assert_array_equal(a, b)


def test_mixtures_round_trip_through_config_json():
    for enc in (Mixture(pattern=("rope", "rope", "rope", "nope")), RNoPE(nope_every=3, base=5e5)):
        cfg = RunConfig(encoding=enc)
        back = RunConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
        assert back == cfg and hash(back.encoding) == hash(enc)
    # A list (as JSON or a command line gives) becomes a tuple: the encoding stays hashable.
    listed = encodings.get("mixture", pattern=["rope", "nope"])
    assert listed == Mixture(pattern=("rope", "nope")) and hash(listed)
    assert Mixture(pattern=("rope", "nope")).label() == "mixture(rope,nope)"


def test_mixture_errors_name_the_constraint():
    with pytest.raises(
        ValueError, match="unknown encoding 'rotary'. Known encodings: nope, .*rope"
    ):
        Mixture(pattern=("rope", "rotary")).check(DIMS, 100)
    with pytest.raises(ValueError, match="'sinusoidal' adds its vectors to the token embedding"):
        Mixture(pattern=("rope", "sinusoidal")).check(DIMS, 100)
    with pytest.raises(ValueError, match="members need different positions"):
        Mixture(pattern=("rope", "rope_nd")).check(DIMS, 100)
    with pytest.raises(ValueError, match="pattern is empty"):
        Mixture(pattern=()).check(DIMS, 100)
    with pytest.raises(ValueError, match="is itself a per-layer mixture"):
        Mixture(pattern=("rope", "rnope")).check(DIMS, 100)
    with pytest.raises(ValueError, match="nope_every must be >= 1"):
        RNoPE(nope_every=0).check(DIMS, 100)
    with pytest.raises(ValueError, match="rnope base must be > 0"):
        RNoPE(base=0.0).check(DIMS, 100)
    # A member's own constraint (rotary head dims must be even) reaches the mixture.
    with pytest.raises(ValueError, match="head_dim for rotary encodings must be even"):
        RNoPE().check(Dims(d_model=12, num_heads=4, head_dim=3), 100)
    # The mixture takes its members' positions: 2-D members need a 2-D sampler.
    with pytest.raises(ValueError, match="needs 2-D positions pos_BLA"):
        RunConfig(encoding=Mixture(pattern=("rope_nd",))).check()


def test_shared_tables_cannot_join_a_per_layer_mixture():
    """A mixture has no top-level parameters of its own, so a member's shared table would never
    be made: refused, while the per-layer T5 is a fine member."""

    @dataclasses.dataclass(frozen=True)
    class T5AndRoPE(LayerMixture):
        name = "t5_and_rope"
        shared: bool = True

        def member(self, layer):
            return encodings.get("t5", shared=self.shared) if layer == 0 else encodings.get("rope")

        def members(self):
            return (self.member(0), self.member(1))

    with pytest.raises(ValueError, match="'t5.shared=True.' adds its vectors .* or keeps param"):
        T5AndRoPE().check(TINY.dims(), 16)
    T5AndRoPE(shared=False).check(TINY.dims(), 16)
