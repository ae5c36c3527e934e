"""The protocol options of issue 23 against independent reconstructions: end tokens, the addition
formats, randomly started index hints, T5 as the papers ran it (one table, unscaled logits),
learning-rate schedules, and the errors that say where an option lives."""

import dataclasses
import functools
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pe_research import encodings, positions, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.encodings.base import Encoding
from pe_research.encodings.bias import t5_relative_bucket
from pe_research.encodings.mixture import LayerMixture
from pe_research.model import KEYS, PROBS, QUERIES, Transformer
from pe_research.training.step import make_schedule


@functools.cache
def compiled_sampler(task, batch_size, length, causal):
    return jax.jit(lambda key: task.sample(key, batch_size, length, causal=causal))


def sample(task, seed, batch_size, length, causal=True):
    batch = compiled_sampler(task, batch_size, length, causal)(jax.random.key(seed))
    return jax.tree.map(np.asarray, batch)


def full_sequence(batch, b, causal):
    """Row b's whole token sequence: a decoder's inputs plus its last target; an encoder's
    targets (its inputs with the answers filled in)."""
    n_valid = int(batch.valid[b].sum())
    if causal:
        return np.append(batch.inputs[b][:n_valid], batch.targets[b][n_valid - 1])
    return batch.targets[b][:n_valid]


# -- end tokens --------------------------------------------------------------------------------

REARRANGE = {
    "copy": lambda x: list(x),
    "reverse": lambda x: list(x[::-1]),
    "duplicate": lambda x: list(x) + list(x),
}


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("name", sorted(REARRANGE))
def test_end_token_ends_the_answer_and_is_scored(name, causal):
    task = tasks.get(name, end_token=True)
    assert task.vocab_size == task.alphabet + 4 and task.end == task.alphabet + 3
    batch = sample(task, 0, 32, 9, causal)
    seen = set()
    for b in range(32):
        seq = full_sequence(batch, b, causal)
        sep = int(np.flatnonzero(seq == task.sep)[0])
        x = seq[:sep]
        seen.add(len(x))
        answer = REARRANGE[name](x) + [task.end]
        np.testing.assert_array_equal(seq[sep + 1 :], answer)
        assert len(seq) == task.seq_len(len(x), causal) + causal
        # Scored: every answer token, END included, against its own target.
        first = sep if causal else sep + 1
        scored = np.flatnonzero(batch.loss_mask[b])
        np.testing.assert_array_equal(scored, first + np.arange(len(answer)))
        np.testing.assert_array_equal(batch.targets[b][scored], answer)
        if not causal:
            assert (batch.inputs[b][scored] == task.blank).all()
    assert len(seen) > 4


def test_without_the_end_token_the_answer_stops_at_the_last_symbol():
    plain, ended = tasks.get("reverse"), tasks.get("reverse", end_token=True)
    width = ended.seq_len(7, True)  # one width for both: the same symbols are drawn
    a, b = (
        jax.tree.map(np.asarray, t.sample(jax.random.key(3), 16, 7, pad_to=width))
        for t in (plain, ended)
    )
    assert plain.vocab_size == plain.alphabet + 3 and (a.targets < plain.vocab_size).all()
    for row in range(16):
        n = int(a.valid[row].sum())
        np.testing.assert_array_equal(a.inputs[row][:n], b.inputs[row][:n])  # same symbols
        assert b.valid[row].sum() == n + 1 and b.targets[row][n] == ended.end


@pytest.mark.parametrize(
    ("name", "options"),
    [("offset", {}), ("byte_lm", {}), ("grid", {}), ("count_copy", {"repeat": 2})],
)
def test_an_end_token_on_a_task_without_one_names_the_tasks_that_have_it(name, options):
    with pytest.raises(ValueError, match=r"no option\(s\) \['end_token'\].*copy, reverse"):
        tasks.get(name, end_token=True, **options)


def test_a_random_offset_on_a_sampler_without_one_names_the_samplers_that_have_it():
    for name in ("contiguous", "randomized", "scaled"):
        with pytest.raises(ValueError, match=r"max_offset.*choose one of those.*offset --max"):
            positions.get(name, max_offset=8)
    assert positions.get("coupled", max_offset=8).max_offset == 8


# -- addition formats ----------------------------------------------------------------------------


def digits(tokens, most_significant_first):
    values = [int(t) for t in tokens]
    values = values[::-1] if most_significant_first else values
    return sum(d * 10**k for k, d in enumerate(values))


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("reversed_operands", [True, False])
def test_addition_formats_against_python_integers(reversed_operands, causal):
    """Operands in either order, the sum least significant first, END after it; coupled
    positions follow significance; hints start at a random h_o in training, at h_0 held out."""
    task = tasks.get(
        "addition", index_hints=True, hints=24, hint_offset=6,
        reversed_operands=reversed_operands, end_token=True,
    )  # fmt: skip
    batch = sample(task, 1, 64, 7, causal)
    offsets = set()
    for b in range(64):
        seq = full_sequence(batch, b, causal)
        plus, sep = int(np.argmax(seq == task.plus)), int(np.argmax(seq == task.sep))
        n = plus // 2
        assert len(seq) == 6 * n + 5 == task.seq_len(n, causal) + causal
        a_part, b_part, c_part = seq[:plus], seq[plus + 1 : sep], seq[sep + 1 : -1]
        assert seq[-1] == task.end
        sig = list(range(n))[:: 1 if reversed_operands else -1]
        o = int(c_part[0]) - task.hint(0)
        offsets.add(o)
        for part, order in ((a_part, sig), (b_part, sig), (c_part, range(n + 1))):
            np.testing.assert_array_equal(part[0::2], [task.hint(o + k) for k in order])
        a = digits(a_part[1::2], not reversed_operands)
        b_val = digits(b_part[1::2], not reversed_operands)
        assert digits(c_part[1::2], False) == a + b_val
        # Scored: the sum's digits and END.
        first = sep if causal else sep + 1
        expect = list(first + 2 * np.arange(n + 1) + 1) + [first + 2 * n + 2]
        np.testing.assert_array_equal(np.flatnonzero(batch.loss_mask[b]), expect)
        # Coupled positions: significance k at k + 1; PLUS, SEP and END at 0.
        coupled = [k + 1 for k in sig for _ in range(2)]
        want = coupled + [0] + coupled + [0] + [k + 1 for k in range(n + 1) for _ in range(2)]
        want += [0]
        width = len(seq) - causal
        np.testing.assert_array_equal(batch.coords[b, :width, 0], want[:width])
    assert offsets == set(range(7)), offsets  # every start 0..6 drawn in 64 rows
    held = sample(task.held_out(), 1, 16, 7, causal)
    for b in range(16):
        seq = full_sequence(held, b, causal)
        sep = int(np.argmax(seq == task.sep))
        assert seq[sep + 1] == task.hint(0)  # the sum's first hint: h_0, no offset


def test_default_addition_is_unchanged_by_the_new_options():
    """The defaults draw the same digits as before the options existed (the frozen evaluation
    sets keep their fingerprints): the hint offset has a key of its own."""
    plain = tasks.get("addition", index_hints=True, hints=16)
    shifted = tasks.get("addition", index_hints=True, hints=16, hint_offset=3)
    a, b = sample(plain, 5, 16, 6), sample(shifted, 5, 16, 6)
    is_hint = a.inputs >= plain.hint(0)
    np.testing.assert_array_equal(a.inputs[~is_hint], b.inputs[~is_hint])
    np.testing.assert_array_equal(a.coords, b.coords)


@pytest.mark.parametrize("causal", [True, False])
def test_a_random_hint_start_draws_anywhere_the_hints_fit_in_training_and_held_out(causal):
    """Zhou et al.'s sampling: each sequence's hints are a consecutive run h_o .. h_{o+n} of the
    `hints` symbols, o drawn anywhere it fits, in training and evaluation alike."""
    task = tasks.get("addition", index_hints=True, hints=12, random_hint_start=True)
    for sampled in (task, task.held_out()):
        batch = sample(sampled, 3, 256, 7, causal)
        starts: dict[int, set[int]] = defaultdict(set)
        for b in range(256):
            seq = full_sequence(batch, b, causal)
            plus, sep = int(np.argmax(seq == task.plus)), int(np.argmax(seq == task.sep))
            n = plus // 2
            o = int(seq[0]) - task.hint(0)
            for part, count in ((seq[:plus], n), (seq[plus + 1 : sep], n), (seq[sep + 1 :], n + 1)):
                np.testing.assert_array_equal(
                    part[0 : 2 * count : 2], [task.hint(o + k) for k in range(count)]
                )
            assert 0 <= o and o + n <= task.hints - 1  # the carry digit's hint still exists
            starts[n].add(o)
        assert starts[7] == set(range(12 - 7)), starts[7]  # every start that fits is drawn
        assert max(starts[1]) > 7  # short numbers reach the far hints


def test_random_hint_start_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="index_hints is off: set --index-hints"):
        tasks.get("addition", random_hint_start=True)
    with pytest.raises(ValueError, match="keep one"):
        tasks.get("addition", index_hints=True, hint_offset=2, random_hint_start=True)
    with pytest.raises(ValueError, match="random_hint_start must be true or false"):
        tasks.get("addition", index_hints=True, random_hint_start=1)


def test_hint_offset_needs_hints_for_every_training_length():
    task = tasks.get("addition", index_hints=True, hints=20, hint_offset=12)
    cfg = RunConfig(task=task, train=TrainConfig(train_length=8), eval=EvalConfig(lengths=(8, 16)))
    with pytest.raises(ValueError, match="reach hint h_20.*raise hints to at least 21"):
        cfg.check()
    ok = tasks.get("addition", index_hints=True, hints=21, hint_offset=12)
    RunConfig(task=ok, train=TrainConfig(train_length=8), eval=EvalConfig(lengths=(8, 16))).check()
    with pytest.raises(ValueError, match="index_hints is off: set --index-hints"):
        tasks.get("addition", hint_offset=2)


# -- T5 as the papers ran it -----------------------------------------------------------------------

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


@pytest.mark.parametrize("scaled", [True, False])
def test_t5_bias_adds_to_scaled_or_unscaled_logits(scaled):
    """Attention probabilities against float64 numpy: softmax(q.k [/ sqrt(K)] + table[bucket])
    over earlier keys, from the q and k the model records before its hooks."""
    cfg = ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32)
    enc = encodings.get("t5", shared=True, scaled=scaled, num_buckets=8, max_distance=16)
    model = Transformer(cfg, enc, 10, rngs=nnx.Rngs(0))
    model.set_attributes(capture_attention=True)
    L = 24
    tokens = jax.random.randint(jax.random.key(1), (1, L), 0, 10)
    pos = jnp.arange(L)[None]
    _, sown = nnx.capture(model, nnx.Intermediate)(tokens, pos, jnp.ones((1, L), bool))
    sown = nnx.to_pure_dict(sown)["blocks"][0]["attn"]
    probs, q, k = (np.asarray(sown[n][0], np.float64) for n in (PROBS, QUERIES, KEYS))
    table = np.asarray(model.pe["table_NH"][...], np.float64)
    rel = np.arange(L)[None, :] - np.arange(L)[:, None]  # key - query
    bucket = np.asarray(
        t5_relative_bucket(rel, bidirectional=False, num_buckets=8, max_distance=16)
    )
    dot = np.einsum("lhk,mhk->hlm", q[0], k[0])
    want = dot / (np.sqrt(q.shape[-1]) if scaled else 1.0) + table[bucket].transpose(2, 0, 1)
    want = np.where(np.tril(np.ones((L, L), bool))[None], want, -np.inf)
    want = np.exp(want - want.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    np.testing.assert_allclose(probs[0], want, atol=2e-5)


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


def test_a_parameter_name_at_both_levels_is_refused():
    class Clash(Encoding):
        name = "clash"

        def init_embed(self, key, dims):
            return {"w": jnp.zeros(2)}

        def init_layer(self, key, dims):
            return {"w": jnp.zeros(2)}

    with pytest.raises(ValueError, match=r"names parameters \['w'\] both at the top level"):
        Transformer(TINY, Clash(), 12, rngs=nnx.Rngs(0))


# -- learning-rate schedules -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["cosine", "linear", "constant"])
def test_schedules_warm_up_then_follow_their_formula(kind):
    cfg = TrainConfig(steps=200, warmup_steps=20, learning_rate=2.0, lr_schedule=kind)
    cfg.check()
    f = make_schedule(cfg)
    for t in (0, 7, 20, 21, 90, 150, 199, 200):
        if t < 20:
            want = 2.0 * t / 20
        elif kind == "linear":
            want = 2.0 * (200 - t) / 180
        elif kind == "constant":
            want = 2.0
        else:
            want = 0.2 + 0.9 * (1 + np.cos(np.pi * (t - 20) / 180))
        assert abs(float(f(t)) - want) < 1e-5, (kind, t, float(f(t)), want)


def test_bad_schedule_options_name_the_flag():
    with pytest.raises(ValueError, match="--train.lr-schedule to one of cosine, linear, constant"):
        TrainConfig(lr_schedule="poly").check()
    with pytest.raises(ValueError, match="--train.adam-b2"):
        TrainConfig(adam_b2=1.0).check()
