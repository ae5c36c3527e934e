"""The arithmetic tasks (addition and multiplication in reversed-digit format) against Python's
integers: answers, scored spans, coupled digit places, the built evaluation sets, and the errors."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pe_research import tasks
from pe_research.config import EvalConfig, RunConfig, TrainConfig
from pe_research.data import builders, catalog, loader

SEEDS = (0, 1, 2)


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
    """Row b's whole token sequence: a decoder's inputs plus its last target; an encoder's
    targets (its inputs with the answers filled in)."""
    n_valid = int(batch.valid[b].sum())
    if causal:
        return np.append(batch.inputs[b][:n_valid], batch.targets[b][n_valid - 1])
    return batch.targets[b][:n_valid]


def scored_positions(answer_at, causal):
    """Where a sequence's answer tokens are scored: at the token before each in a decoder."""
    return np.asarray(answer_at) - (1 if causal else 0)


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


# -- multiplication --------------------------------------------------------------------------------


def value_of(digits, base=10):
    return sum(int(d) * base**k for k, d in enumerate(digits))


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("seed", SEEDS[:2])
def test_multiplication_answers_the_product_with_digit_places(seed, causal):
    task = tasks.get("multiplication")
    batch = sample(task, seed, 32, 9, causal)
    check_common(task, batch, causal)
    assert batch.targets.max() < task.vocab_size
    assert batch.coords.shape == (*batch.inputs.shape, 1)
    lengths = set()
    for b in range(32):
        seq = full_sequence(batch, b, causal)
        times, sep = int(np.argmax(seq == task.operator)), int(np.argmax(seq == task.sep))
        n = times
        lengths.add(n)
        assert len(seq) == 4 * n + 2 == task.seq_len(n, causal) + causal
        a, b_digits, c = seq[:times], seq[times + 1 : sep], seq[sep + 1 :]
        assert len(b_digits) == n and len(c) == 2 * n
        product = value_of(a) * value_of(b_digits)
        np.testing.assert_array_equal(c, [(product // 10**k) % 10 for k in range(2 * n)])
        answer_at = sep + 1 + np.arange(2 * n)
        np.testing.assert_array_equal(
            np.flatnonzero(batch.loss_mask[b]), scored_positions(answer_at, causal)
        )
        # Each digit's place in its number, from 1; TIMES, SEP and padding at 0.
        places = list(range(1, n + 1))
        expected = places + [0] + places + [0] + list(range(1, 2 * n + 1))
        width = len(seq) - causal
        np.testing.assert_array_equal(batch.coords[b, :width, 0], expected[:width])
        assert (batch.coords[b, width:] == 0).all()
    assert len(lengths) > 4


def test_multiplication_carries_match_python_integers_in_any_base():
    """Long operands of all-(base - 1) digits (the largest column sums and carries) and random
    ones, against Python's integers, in bases 10 and 3."""
    rng = np.random.default_rng(0)
    for base in (10, 3):
        n, T = 30, 64
        a = rng.integers(0, base, (8, T))
        b = rng.integers(0, base, (8, T))
        a[:2, :n], b[:2, :n] = base - 1, base - 1
        a[:, n:], b[:, n:] = 0, 0
        c = np.asarray(tasks.multiply_reversed(jnp.asarray(a), jnp.asarray(b), base))
        for row in range(8):
            product = value_of(a[row], base) * value_of(b[row], base)
            np.testing.assert_array_equal(c[row], [(product // base**k) % base for k in range(T)])


# -- padding, traced lengths and built sets --------------------------------------------------------


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize(
    "task",
    [tasks.get("addition"), tasks.get("addition", index_hints=True, hints=12)],
    ids=lambda t: f"{t.name}{int(getattr(t, 'index_hints', 0))}",
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


@pytest.mark.parametrize("name", ["multiplication"])
def test_traced_lengths_padded_to_one_width_equal_the_eager_batch_in_encoders(name):
    """The encoder form (test_tasks.py checks every task's decoder form)."""
    task, causal = tasks.get(name), False

    @jax.jit
    def traced(key, n):
        return task.sample(key, 4, n, min_length=n, pad_to=48, causal=causal)

    for n in (3, 7):
        a = traced(jax.random.key(n), jnp.int32(n))
        b = task.sample(jax.random.key(n), 4, n, min_length=n, pad_to=48, causal=causal)
        for x, y in zip(a, b, strict=True):
            assert (x is None) == (y is None)
            if x is not None:
                np.testing.assert_array_equal(x, y)
        assert (np.asarray(a.valid).sum(axis=1) == task.seq_len(n, causal)).all()


@pytest.mark.parametrize("name", ["addition", "multiplication"])
def test_built_examples_read_back_as_the_sampled_batches(tmp_path, name):
    """The tfds builder of each task stores what evaluation samples (coords included)."""
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
