"""RoPE's longrope scaling against the LongRoPE reference formula, and the `rope_scaling` /
`rope_parameters` names (Hugging Face configs) of RoPE's scaling."""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rotary_inputs import check_bf16_and_jit

from pe_research import encodings
from pe_research.encodings.base import Dims
from pe_research.encodings.rotary import RoPE, RopeScaling, apply_rope, rope_frequencies

B, L, H, K = 2, 6, 2, 12


def qk(seed=0, k_dim=K, length=L):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, B, length, H, k_dim), dtype=np.float32)
    return jnp.asarray(q), jnp.asarray(k)


def arange_pos(offset=0, length=L):
    return jnp.broadcast_to(jnp.arange(length)[None] + offset, (B, length))


def dims(head_dim):
    return Dims(d_model=H * head_dim, num_heads=H, head_dim=head_dim)


# -- longrope -------------------------------------------------------------------------------------

ORIG = 16
SHORT = (1.0, 1.25, 1.5, 2.0, 3.0, 4.0)
LONG = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)


def longrope(**extra):
    return {
        "rope_type": "longrope",
        "factor": 8.0,
        "original_max_position_embeddings": ORIG,
        "short_factor": list(SHORT),
        "long_factor": list(LONG),
        **extra,
    }


def numpy_longrope(dim, base, seq_len, factor, orig, short, long, attention_factor=None):
    """The LongRoPE reference: inv_freq_j = 1 / (ext_j * base^(2j / dim)), ext = long beyond the
    original context, short otherwise; scale sqrt(1 + ln(factor) / ln(orig)) unless given."""
    ext = long if seq_len is not None and seq_len > orig else short
    inv = [1.0 / (ext[j] * base ** (2 * j / dim)) for j in range(dim // 2)]
    if attention_factor is None:
        attention_factor = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(orig))
    return np.array(inv), attention_factor


@pytest.mark.parametrize("seq_len", [None, 1, ORIG, ORIG + 1, 10 * ORIG])
@pytest.mark.parametrize("extra", [{}, {"attention_factor": 0.8}, {"factor": 1.0}])
def test_longrope_matches_the_reference_formula(seq_len, extra):
    s = longrope(**extra)
    got, scale = rope_frequencies(K, scaling=s, seq_len=seq_len)
    want, want_scale = numpy_longrope(
        K, 10000.0, seq_len, s["factor"], ORIG, SHORT, LONG, extra.get("attention_factor")
    )
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert scale == pytest.approx(want_scale, rel=1e-12)
    assert (scale == 1.0) == (s["factor"] == 1.0 and "attention_factor" not in extra)


def test_longrope_switches_factors_on_the_largest_key_position_and_traces():
    enc = RoPE(scaling=longrope())
    q, k = qk()
    outs = []
    # Largest key positions ORIG - 1 (short factors) and ORIG (long: seq_len ORIG + 1 > ORIG).
    for pos in (arange_pos(ORIG - L), arange_pos(ORIG - L + 1)):
        inv, scale = numpy_longrope(K, 10000.0, int(pos.max()) + 1, 8.0, ORIG, SHORT, LONG)
        want = apply_rope(q, pos, jnp.asarray(inv, jnp.float32), attention_scale=scale)
        outs.append(enc.rotate({}, q, k, pos, pos)[0])
        np.testing.assert_allclose(outs[-1], want, atol=1e-5)
    short_at_long_pos = apply_rope(
        q, arange_pos(ORIG - L + 1), jnp.asarray(numpy_longrope(K, 1e4, 1, 8, ORIG, SHORT, LONG)[0])
    )
    assert not np.allclose(outs[1] / math.sqrt(1 + math.log(8) / math.log(ORIG)), short_at_long_pos)
    traced = jax.jit(lambda n: rope_frequencies(K, scaling=longrope(), seq_len=n)[0])
    for n in (ORIG, ORIG + 1):
        want = numpy_longrope(K, 1e4, n, 8, ORIG, SHORT, LONG)[0]
        np.testing.assert_allclose(traced(n), want, rtol=1e-6)


def test_longrope_errors_name_the_problem():
    with pytest.raises(ValueError, match="'longrope' is missing key 'long_factor'"):
        RoPE(scaling={k: v for k, v in longrope().items() if k != "long_factor"})
    with pytest.raises(ValueError, match=r"short_factor has 4 factors .* 12 components\) has 6"):
        RoPE(scaling=longrope(short_factor=[1, 1, 1, 1])).check(dims(K), 100)
    with pytest.raises(ValueError, match=r"'long_factor' must hold positive factors"):
        RoPE(scaling=longrope(long_factor=[1, 0, 1, 1, 1, 1]))
    with pytest.raises(ValueError, match="needs 'short_factor' as a list of numbers"):
        RoPE(scaling=longrope(short_factor=2.0))
    with pytest.raises(ValueError, match="original_max_position_embeddings >= 2, got 1"):
        RoPE(scaling=longrope(original_max_position_embeddings=1))
    with pytest.raises(ValueError, match="does not use key 'beta_fast'"):
        RoPE(scaling=longrope(beta_fast=32.0))


def test_longrope_round_trips_json_and_stays_hashable():
    enc = RoPE(scaling=longrope())
    assert enc.scaling.short_factor == SHORT and hash(enc) == hash(RoPE(scaling=longrope()))
    hp = json.loads(json.dumps(enc.hyperparameters()))
    assert hp["scaling"]["long_factor"] == list(LONG)
    assert RoPE(**hp) == enc
    assert encodings.from_dict(json.loads(json.dumps(encodings.to_dict(enc)))) == enc


# -- rope_scaling / rope_parameters ---------------------------------------------------------------


@pytest.mark.parametrize("scaling", [longrope(), {"rope_type": "linear", "factor": 4.0}])
def test_rope_parameters_and_rope_scaling_name_the_scaling(scaling):
    plain = RoPE(scaling=scaling)
    q, k = qk()
    pos = arange_pos(20)
    for name in ("rope_scaling", "rope_parameters"):
        enc = encodings.get("rope", **{name: scaling})
        assert enc == plain and enc.scaling == plain.scaling
        assert enc.rope_scaling is None and enc.rope_parameters is None
        assert enc.hyperparameters() == plain.hyperparameters() and enc.label() == plain.label()
        got, want = enc.rotate({}, q, k, pos, pos), plain.rotate({}, q, k, pos, pos)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
    # The same value under two names is fine; so is a RopeScaling.
    assert RoPE(scaling=scaling, rope_parameters=scaling) == plain
    assert RoPE(rope_parameters=RopeScaling.from_dict(scaling)) == plain
    assert RoPE(scaling=scaling) != RoPE()


def test_rope_parameters_newer_form():
    d = {"rope_type": "default", "rope_theta": 500000.0, "partial_rotary_factor": 0.5}
    assert RoPE(base=500000.0, fraction=0.5, rope_parameters=d) == RoPE(base=500000, fraction=0.5)
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    enc = RoPE(base=5e5, rope_parameters={**yarn, "rope_theta": 5e5})
    assert enc == RoPE(base=5e5, scaling=yarn)


def test_rope_parameters_in_config_json():
    from pe_research.config import RunConfig

    d = RunConfig().to_dict()
    d["encoding"] = {"name": "rope", "rope_parameters": longrope()}
    assert RunConfig.from_dict(d).encoding == RoPE(scaling=longrope())


def test_rope_parameters_errors():
    linear = {"rope_type": "linear", "factor": 2.0}
    with pytest.raises(ValueError, match=r"different scalings under several names \(rope_scal"):
        RoPE(rope_scaling=linear, rope_parameters={**linear, "factor": 3.0})
    with pytest.raises(ValueError, match=r"scaling=linear\(factor=2\), rope_parameters=None"):
        RoPE(scaling=linear, rope_parameters={"rope_type": "default"})
    with pytest.raises(ValueError, match=r"sets rope_theta=500000 but base=10000: set base=500000"):
        RoPE(rope_parameters={"rope_type": "default", "rope_theta": 5e5})
    with pytest.raises(ValueError, match=r"partial_rotary_factor=0.5 but fraction=1"):
        RoPE(rope_scaling={**linear, "partial_rotary_factor": 0.5})
    with pytest.raises(
        ValueError, match=r"rope_parameters has unknown key\(s\) \['fctor'\]; known keys: rope_type"
    ):
        RoPE(rope_parameters={"rope_type": "linear", "fctor": 2.0})
    with pytest.raises(ValueError, match=r"rope_type 'default' \(no scaling\) has scaling key"):
        RoPE(rope_parameters={"rope_type": "default", "factor": 2.0})
    with pytest.raises(ValueError, match="rope_scaling must be a dict, got float"):
        RoPE(rope_scaling=2.0)
    with pytest.raises(ValueError, match="Known types: .*longrope .needs factor"):
        RoPE(rope_parameters={"rope_type": "su", "factor": 2.0})


@pytest.mark.parametrize("enc,pos", [(RoPE(scaling=longrope()), arange_pos(3))], ids=["longrope"])
def test_bf16_in_bf16_out_and_jit_equals_eager(enc, pos):
    check_bf16_and_jit(enc, pos)
