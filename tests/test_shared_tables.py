"""Parameters shared by every layer: T5's one table and FIRE's one MLP equal per-layer copies that
are all the same, and a name used at both levels is refused."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pe_research import encodings
from pe_research.config import ModelConfig
from pe_research.encodings.base import Encoding
from pe_research.model import Transformer

TINY = ModelConfig(num_layers=3, d_model=16, num_heads=2, mlp_dim=32)


def logits(model, tokens, pos):
    return np.asarray(model(tokens, pos), np.float64)


@pytest.mark.parametrize(("name", "keys"), [
    ("t5", {"table_NH"}),
    ("fire", {"w_in_F", "b_in_F", "w_out_FH", "b_out_H", "c", "threshold_scale"}),
])  # fmt: skip
def test_the_shared_table_equals_per_layer_tables_that_are_all_the_same(name, keys):
    """T5's one table (Kazemnejad et al.'s decoder) and FIRE's one MLP (Zhou et al. 2024)."""
    shared = Transformer(TINY, encodings.get(name, shared=True), 12, rngs=nnx.Rngs(0))
    per_layer = Transformer(TINY, encodings.get(name), 12, rngs=nnx.Rngs(1))
    table = nnx.to_pure_dict(nnx.state(shared, nnx.Param))
    top = table.pop("pe")  # the one table, at the top level
    assert set(top) == keys
    for block in table["blocks"].values():
        assert "pe" not in block["attn"]  # no per-layer table
        block["attn"]["pe"] = dict(top)
    state = nnx.state(per_layer, nnx.Param)
    nnx.replace_by_pure_dict(state, table)
    nnx.update(per_layer, state)
    tokens = jax.random.randint(jax.random.key(2), (2, 40), 0, 12)
    pos = jnp.broadcast_to(jnp.arange(40), (2, 40))
    np.testing.assert_allclose(logits(per_layer, tokens, pos), logits(shared, tokens, pos),
                               rtol=1e-6, atol=1e-6)  # fmt: skip
    # And the layers really read it: a changed shared table changes the output.
    first = sorted(keys)[0]
    value = shared.pe[first][...]
    shared.pe[first] = nnx.Param(value + jnp.linspace(0.0, 3.0, value.size).reshape(value.shape))
    assert np.abs(logits(shared, tokens, pos) - logits(per_layer, tokens, pos)).max() > 1e-3


def test_a_parameter_name_at_both_levels_is_refused():
    class Clash(Encoding):
        name = "clash"

        def init_embed(self, key, dims):
            return {"w": jnp.zeros(2)}

        def init_layer(self, key, dims):
            return {"w": jnp.zeros(2)}

    with pytest.raises(ValueError, match=r"names parameters \['w'\] both at the top level"):
        Transformer(TINY, Clash(), 12, rngs=nnx.Rngs(0))
