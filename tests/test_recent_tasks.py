"""The tasks of issue 15 (addition, flip-flop, selective copy, counting) against independent
numpy reconstructions, and the coupled position sampler with the rules it bends."""

import dataclasses
import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pe_research import encodings, positions, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.data import builders, catalog, loader
from pe_research.sweeps import experiments

SEEDS = (0, 1, 2)
ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def compiled_sampler(task, batch_size, length, causal):
    """One compiled program per task and shape, shared by the seeds, instead of eager ops."""
    return jax.jit(lambda key: task.sample(key, batch_size, length, causal=causal))


def sample(task, seed, batch_size, length, causal=True):
    fn = compiled_sampler(task, batch_size, length, causal)
    return jax.tree.map(np.asarray, fn(jax.random.key(seed)))


def check_common(task, batch, causal):
    """Teacher forcing, scored tokens inside the real ones, PAD targets after the sequence."""
    for b in range(batch.inputs.shape[0]):
        n_valid = int(batch.valid[b].sum())
        assert batch.valid[b][:n_valid].all() and not batch.valid[b][n_valid:].any()
        assert not (batch.loss_mask[b] & ~batch.valid[b]).any()
        assert (batch.targets[b][~batch.valid[b]] == task.pad).all()
        if causal:
            np.testing.assert_array_equal(
                batch.targets[b][: n_valid - 1], batch.inputs[b][1:n_valid]
            )
        else:
            assert (batch.inputs[b][batch.loss_mask[b]] == task.blank).all()
            keep = ~batch.loss_mask[b]
            np.testing.assert_array_equal(batch.inputs[b][keep], batch.targets[b][keep])
    assert batch.inputs.max() < task.vocab_size


def full_sequence(batch, b, causal):
    """The whole token sequence of row b: a decoder's inputs plus its last target."""
    n_valid = int(batch.valid[b].sum())
    if causal:
        return np.append(batch.inputs[b][:n_valid], batch.targets[b][n_valid - 1])
    return batch.targets[b][:n_valid]


# -- addition --------------------------------------------------------------------------------------


def reversed_digits(value, count):
    return [(value // 10**k) % 10 for k in range(count)]


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("hints", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
def test_addition_answers_the_sum_with_coupled_positions(seed, hints, causal):
    task = tasks.get("addition", index_hints=hints, hints=16)
    batch = sample(task, seed, 32, 9, causal)
    check_common(task, batch, causal)
    assert batch.coords.shape == (*batch.inputs.shape, 1)
    unit = 2 if hints else 1
    lengths = set()
    for b in range(32):
        seq = full_sequence(batch, b, causal)
        plus, sep = int(np.argmax(seq == task.plus)), int(np.argmax(seq == task.sep))
        n = plus // unit
        lengths.add(n)
        assert len(seq) == (3 * n + 1) * unit + 2 == task.seq_len(n, causal) + causal
        a_tok, b_tok, c_tok = seq[:plus], seq[plus + 1 : sep], seq[sep + 1 :]
        if hints:  # h_k before the digit of significance k, in all three numbers
            for part, count in ((a_tok, n), (b_tok, n), (c_tok, n + 1)):
                np.testing.assert_array_equal(part[0::2], [task.hint(k) for k in range(count)])
            a_tok, b_tok, c_tok = a_tok[1::2], b_tok[1::2], c_tok[1::2]
        assert len(a_tok) == len(b_tok) == n and len(c_tok) == n + 1
        a = sum(int(d) * 10**k for k, d in enumerate(a_tok))
        b_val = sum(int(d) * 10**k for k, d in enumerate(b_tok))
        np.testing.assert_array_equal(c_tok, reversed_digits(a + b_val, n + 1))
        # Scored: exactly the answer digits (never a hint), each against its own target.
        start = sep if causal else sep + 1
        answer_at = start + unit * np.arange(n + 1) + unit - 1
        np.testing.assert_array_equal(np.flatnonzero(batch.loss_mask[b]), answer_at)
        np.testing.assert_array_equal(batch.targets[b][answer_at], c_tok)
        # Coupled positions: significance k (digit and hint) at k + 1, PLUS and SEP at 0.
        sig = [k + 1 for k in range(n) for _ in range(unit)]
        expected = sig + [0] + sig + [0] + [k + 1 for k in range(n + 1) for _ in range(unit)]
        width = len(seq) - causal
        np.testing.assert_array_equal(batch.coords[b, :width, 0], expected[:width])
        assert (batch.coords[b, width:] == 0).all()
    assert len(lengths) > 3


def test_addition_carries_through_long_chains():
    """Sums whose carries run the whole width, against Python integers."""
    rng = np.random.default_rng(0)
    n = 12
    a = rng.integers(0, 10, (16, n + 4))
    b = 9 - a  # every column sums to 9: a carry entering column 0 would ripple all the way
    a[:8, 0], b[:8, 0] = 5, 7  # rows 0-7: a carry out of column 0 ripples through all 12
    a[:, n:], b[:, n:] = 0, 0
    c = np.asarray(tasks.add_reversed(jnp.asarray(a), jnp.asarray(b), 10))
    for row in range(16):
        value = sum(int(d) * 10**k for k, d in enumerate(a[row])) + sum(
            int(d) * 10**k for k, d in enumerate(b[row])
        )
        np.testing.assert_array_equal(c[row], reversed_digits(value, n + 4))
    assert (c[:8, n] == 1).all() and (c[8:, n] == 0).all()


def test_addition_in_other_bases():
    task = tasks.get("addition", alphabet=2)
    batch = sample(task, 0, 16, 6)
    for b in range(16):
        seq = full_sequence(batch, b, True)
        plus, sep = int(np.argmax(seq == task.plus)), int(np.argmax(seq == task.sep))
        a = sum(int(d) << k for k, d in enumerate(seq[:plus]))
        b_val = sum(int(d) << k for k, d in enumerate(seq[plus + 1 : sep]))
        assert sum(int(d) << k for k, d in enumerate(seq[sep + 1 :])) == a + b_val


def test_addition_hints_beyond_the_alphabet_are_refused():
    task = tasks.get("addition", index_hints=True, hints=8)
    assert task.seq_len(7, True) == 6 * 7 + 3
    with pytest.raises(ValueError, match="raise hints to at least 9"):
        task.seq_len(8, True)
    cfg = RunConfig(task=task, train=TrainConfig(train_length=4), eval=EvalConfig(lengths=(4, 8)))
    with pytest.raises(ValueError, match="hint alphabet has hints=8"):
        cfg.check()
    with pytest.raises(ValueError, match="hints must be an integer >= 2"):
        tasks.get("addition", hints=1)
    with pytest.raises(ValueError, match="index_hints must be true or false"):
        tasks.get("addition", index_hints=1)


# -- flip-flop -------------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("seed", SEEDS)
def test_flip_flop_reads_return_the_last_write(seed, causal):
    task = tasks.get("flip_flop")
    batch = sample(task, seed, 32, 12, causal)
    check_common(task, batch, causal)
    for b in range(32):
        seq = full_sequence(batch, b, causal)
        ops, bits = seq[0::2], seq[1::2]
        n = len(ops)
        assert len(seq) == 2 * n and 2 <= n <= 12
        assert ops[0] == task.write and ops[-1] == task.read
        assert set(ops) <= {task.write, task.read, task.ignore} and bits.max() < 2
        last, reads = None, []
        for i, (op, bit) in enumerate(zip(ops, bits, strict=True)):
            if op == task.write:
                last = bit
            elif op == task.read:
                assert bit == last, f"row {b}: read {i} gives {bit}, last write {last}"
                reads.append(2 * i + 1)
        scored = np.asarray(reads) - (1 if causal else 0)
        np.testing.assert_array_equal(np.flatnonzero(batch.loss_mask[b]), scored)


def test_flip_flop_instruction_frequencies_follow_p_ignore():
    for p in (0.8, 0.1):
        task = tasks.get("flip_flop", p_ignore=p)
        batch = sample(task, 0, 256, 40)
        ops = np.concatenate(
            [full_sequence(batch, b, True)[0::2][1:-1] for b in range(256)]
        )  # the random ones: not the first write nor the last read
        assert abs(np.mean(ops == task.ignore) - p) < 0.03
        assert abs(np.mean(ops == task.write) - np.mean(ops == task.read)) < 0.03


def test_flip_flop_shortest_sequence_is_write_then_read():
    task = tasks.get("flip_flop")
    assert task.seq_len(1, False) == task.seq_len(2, False) == 4
    batch = sample(task, 0, 8, 1, causal=False)
    assert (batch.valid.sum(axis=1) == 4).all()
    assert (batch.inputs[:, 0] == task.write).all() and (batch.inputs[:, 2] == task.read).all()
    with pytest.raises(ValueError, match="p_ignore must be a probability in \\[0, 1\\]"):
        tasks.get("flip_flop", p_ignore=1.5)


# -- selective copy --------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize(("seed", "percent"), [(0, 100), (1, 50), (2, 200)])
def test_selective_copy_answers_the_symbols_without_the_noise(seed, percent, causal):
    task = tasks.get("selective_copy", alphabet=6, noise_percent=percent)
    batch = sample(task, seed, 32, 10, causal)
    check_common(task, batch, causal)
    patterns = set()
    for b in range(32):
        seq = full_sequence(batch, b, causal)
        sep = int(np.argmax(seq == task.sep))
        prompt, answer = seq[:sep], seq[sep + 1 :]
        symbols = prompt[prompt != task.noise]
        n = len(symbols)
        assert len(answer) == n and 1 <= n <= 10
        assert (prompt == task.noise).sum() == n * percent // 100
        np.testing.assert_array_equal(answer, symbols)
        assert symbols.max() < task.alphabet
        start = sep if causal else sep + 1
        np.testing.assert_array_equal(np.flatnonzero(batch.loss_mask[b]), start + np.arange(n))
        patterns.add(tuple(prompt == task.noise))
    assert len(patterns) > 20  # noise placed at random, not in one fixed pattern
    with pytest.raises(ValueError, match="noise_percent must be an integer >= 0"):
        tasks.get("selective_copy", noise_percent=-1)


# -- counting --------------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("seed", SEEDS)
def test_counting_answers_the_count_of_the_query(seed, causal):
    task = tasks.get("counting", count_digits=2)
    batch = sample(task, seed, 32, 30, causal)
    check_common(task, batch, causal)
    counts = set()
    for b in range(32):
        seq = full_sequence(batch, b, causal)
        sep = int(np.argmax(seq == task.sep))
        query, stream, answer = seq[0], seq[1:sep], seq[sep + 1 :]
        count = int((stream == query).sum())
        counts.add(count)
        digits = answer - task.digit(0)
        assert len(digits) == 2 and 0 <= digits.min() and digits.max() <= 9
        assert 10 * digits[0] + digits[1] == count
        start = sep if causal else sep + 1
        np.testing.assert_array_equal(np.flatnonzero(batch.loss_mask[b]), start + np.arange(2))
    assert len(counts) > 4


def test_counting_beyond_its_digits_is_refused():
    task = tasks.get("counting", count_digits=1)
    assert task.seq_len(9, True) == 11
    with pytest.raises(ValueError, match="raise count_digits to at least 2"):
        task.seq_len(10, True)
    with pytest.raises(ValueError, match="count_digits must be an integer in \\[1, 9\\]"):
        tasks.get("counting", count_digits=0)


# -- padding and traced lengths --------------------------------------------------------------------

NEW_TASKS = [
    tasks.get("addition"),
    tasks.get("addition", index_hints=True, hints=12),
    tasks.get("flip_flop", p_ignore=0.5),
    tasks.get("selective_copy", noise_percent=150),
    tasks.get("counting"),
]


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize(
    "task", NEW_TASKS, ids=lambda t: f"{t.name}{int(getattr(t, 'index_hints', 0))}"
)
def test_traced_lengths_padded_to_one_width_equal_the_eager_batch(task, causal):
    @jax.jit
    def traced(key, n):
        return task.sample(key, 4, n, min_length=n, pad_to=80, causal=causal)

    for n in (3, 7):
        a = traced(jax.random.key(n), jnp.int32(n))
        b = task.sample(jax.random.key(n), 4, n, min_length=n, pad_to=80, causal=causal)
        for x, y in zip(a, b, strict=True):
            assert (x is None) == (y is None)
            if x is not None:
                np.testing.assert_array_equal(x, y)
        assert a.inputs.shape == (4, 80)
        assert (np.asarray(a.valid).sum(axis=1) == task.seq_len(n, causal)).all()
        assert (np.asarray(a.inputs)[~np.asarray(a.valid)] != task.blank).all()


@pytest.mark.parametrize("name", ["addition", "flip_flop", "selective_copy", "counting"])
def test_built_examples_read_back_as_the_sampled_batches(tmp_path, name):
    """The tfds builder of each new task stores what evaluation samples (coords included)."""
    config = builders.TaskConfig(name="tiny", lengths=(3, 5), per_length=4)
    catalog.build(name, config, data_dir=tmp_path)
    eval_set = loader.EvalSet(f"tfds:pe_{name}/tiny", tmp_path)
    task = tasks.get(name)
    for n, fresh in zip(config.lengths, builders._eval_batches(task, config), strict=True):
        stored = eval_set.batch(n, config.per_length, fresh.inputs.shape[1])
        valid = np.asarray(fresh.valid)
        for field, a, b in zip(fresh._fields, fresh, stored, strict=True):
            assert (a is None) == (b is None), field
            if a is None:
                continue
            a = np.asarray(a)
            if field == "inputs":  # beyond the sequence the built set holds PAD
                a = np.where(valid, a, task.pad)
            np.testing.assert_array_equal(a, b, err_msg=f"{name} {field} at length {n}")


# -- the coupled position sampler ------------------------------------------------------------------


def test_coupled_sampler_gives_equal_significance_one_position_plus_an_offset():
    batch = compiled_sampler(tasks.get("addition"), 64, 6, True)(jax.random.key(0))
    sampler = positions.Coupled(max_offset=10)
    pos = np.asarray(
        jax.jit(sampler.sample)(jax.random.key(1), batch.valid, coords_BLA=batch.coords)
    )
    valid, coords = np.asarray(batch.valid), np.asarray(batch.coords)[..., 0]
    assert pos.dtype == np.int32 and (pos[~valid] == 0).all()
    offsets = set()
    for b in range(64):
        offset = pos[b][valid[b]] - coords[b][valid[b]]
        assert len(set(offset)) == 1  # one offset per row
        offsets.add(int(offset[0]))
    assert offsets == set(range(11))
    assert pos.max() <= sampler.max_position(batch.inputs.shape[1])
    plain = positions.Coupled().sample(jax.random.key(1), batch.valid, coords_BLA=batch.coords)
    np.testing.assert_array_equal(plain, np.where(valid, coords, 0))


def test_coupled_sampler_without_coupling_names_the_task_and_the_sampler():
    copy = compiled_sampler(tasks.get("copy"), 2, 4, True)(jax.random.key(0))
    with pytest.raises(ValueError, match="coupled position sampler.*use a task with coupled"):
        positions.Coupled().sample(jax.random.key(0), copy.valid, coords_BLA=copy.coords)
    grid = compiled_sampler(tasks.get("grid"), 2, 3, True)(jax.random.key(0))
    with pytest.raises(ValueError, match=r"must have shape \(2, 19, 1\)"):
        positions.Coupled().sample(jax.random.key(0), grid.valid, coords_BLA=grid.coords)
    with pytest.raises(ValueError, match="max_offset must be an integer >= 0"):
        positions.Coupled(max_offset=-1)
    for task in ("copy", "grid"):
        cfg = RunConfig(task=tasks.get(task), positions=positions.Coupled())
        with pytest.raises(ValueError, match=f"'coupled' position sampler .* task '{task}'"):
            cfg.check()
    cfg = RunConfig(task=tasks.get("addition"), encoding=encodings.get("rope_nd", axes=2),
                    positions=positions.Grid())  # fmt: skip
    with pytest.raises(ValueError, match="reads 2 coordinate.s. .* task 'addition' gives 1"):
        cfg.check()


def test_coupling_is_refused_with_encodings_that_need_increasing_positions():
    """T5's unidirectional buckets read a larger key position as the future (bucket 0) and xPos
    would grow instead of decay: both need increasing positions, which coupling breaks."""
    assert not positions.Coupled.increasing
    for name in ("t5", "xpos"):
        cfg = RunConfig(task=tasks.get("addition"), encoding=encodings.get(name),
                        positions=positions.Coupled())  # fmt: skip
        with pytest.raises(ValueError, match="repeat or decrease over the tokens"):
            cfg.check()
        dataclasses.replace(cfg, positions=positions.Contiguous()).check()
    for name in ("rope", "alibi", "fire", "learned", "nope", "cope"):
        RunConfig(task=tasks.get("addition"), encoding=encodings.get(name),
                  positions=positions.Coupled()).check()  # fmt: skip


def test_every_sampler_declares_what_it_reads_and_whether_it_increases():
    for name, cls in positions.classes().items():
        assert cls.task_axes == {"grid": 2, "coupled": 1, "abacus": 1}.get(name), name
        assert cls.increasing == (name not in ("grid", "coupled", "abacus", "mrope")), name


def test_evaluation_keeps_the_coupling_without_the_offset():
    cfg = RunConfig(task=tasks.get("addition"), positions=positions.Coupled(max_offset=7))
    assert cfg.eval_sampler == positions.Coupled()
    train_positions = dataclasses.replace(cfg, eval=EvalConfig(positions="train"))
    assert train_positions.eval_sampler == positions.Coupled(max_offset=7)
    assert RunConfig(positions=positions.Offset()).eval_sampler == positions.Contiguous()
    assert RunConfig(task=tasks.get("grid"), encoding=encodings.get("rope_nd", axes=2),
                     positions=positions.Grid()).eval_sampler == positions.Grid()  # fmt: skip


# -- the experiments train -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["addition", "contextual_tasks"])
def test_experiment_configs_train_a_few_steps(name):
    """Every task, encoding and position sampler of the experiment's CPU preset trains three
    steps in at least one config (one seed; the configs that add none are skipped), the model cut
    to one layer and the batch to 8 sequences in one length bucket to keep the compile time
    down: the loss is finite and changes."""
    module = experiments.load_experiment(str(ROOT / "experiments" / f"{name}.py"))
    configs = experiments.experiment_runs(module, "cpu")
    seen: set = set()
    for cfg in configs:
        parts = {("task", cfg.task), ("encoding", cfg.encoding), ("positions", cfg.positions)}
        if parts <= seen:
            continue
        seen |= parts
        cfg = dataclasses.replace(
            cfg,
            model=dataclasses.replace(cfg.model, num_layers=1),
            train=dataclasses.replace(cfg.train, batch_size=8, length_buckets=1),
        )
        cfg.check()
        keys = train.keys_from_seed(cfg.seed)
        graphdef, state = train.init_state(cfg, keys)
        step = train.make_train_step(cfg, graphdef)
        losses = []
        for i in range(3):
            state, metrics = step(state, jax.random.fold_in(keys.data, i), keys.positions)
            losses.append(float(metrics["loss"]))
        assert np.isfinite(losses).all() and losses[0] != losses[-1], (parts, losses)
    every = {(k, getattr(c, k)) for c in configs for k in ("task", "encoding", "positions")}
    assert seen == every


def test_coupled_positions_reach_the_model():
    """With repeated positions the model stays finite; RoPE's logits follow the coupling (they
    differ from contiguous positions), NoPE's cannot."""
    task, coupled = tasks.get("addition"), positions.Coupled(max_offset=3)
    batch = compiled_sampler(task, 4, 4, True)(jax.random.key(0))
    pos = {
        sampler.name: jax.jit(sampler.sample)(jax.random.key(1), batch.valid, batch.coords)
        for sampler in (coupled, positions.Contiguous())
    }
    model = ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32)
    valid = np.asarray(batch.valid)
    logits = {}
    for name in ("rope", "nope"):
        cfg = RunConfig(task=task, encoding=encodings.get(name), positions=coupled, model=model,
                        train=TrainConfig(train_length=4))  # fmt: skip
        cfg.check()
        graphdef, params = train.init_model(cfg, jax.random.key(0))
        forward = jax.jit(
            functools.partial(lambda g, p, x, q, v: nnx.merge(g, p)(x, q, v), graphdef)
        )
        for sampler, pos_BL in pos.items():
            out = np.asarray(forward(params, batch.inputs, pos_BL, batch.valid))[valid]
            assert np.isfinite(out).all()
            logits[name, sampler] = out
    assert np.abs(logits["rope", "coupled"] - logits["rope", "contiguous"]).max() > 1e-3
    np.testing.assert_allclose(logits["nope", "coupled"], logits["nope", "contiguous"], atol=1e-6)
