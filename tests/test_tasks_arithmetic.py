"""The arithmetic tasks (addition and multiplication in reversed-digit format) against Python's
integers: answers, scored spans, coupled digit places, the addition formats and index hints, the
built evaluation sets, and the errors."""

from collections import defaultdict

import jax.numpy as jnp
import numpy as np
import pytest
from task_checks import (
    check_built_examples,
    check_common,
    check_traced_equals_eager,
    full_sequence,
    sample,
    scored_positions,
)

from pe_research import tasks
from pe_research.config import EvalConfig, RunConfig, TrainConfig

SEEDS = (0, 1, 2)


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


# -- addition formats and index hints --------------------------------------------------------------


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
    check_traced_equals_eager(task, causal, pad_to=80)


@pytest.mark.parametrize("name", ["multiplication"])
def test_traced_lengths_padded_to_one_width_equal_the_eager_batch_in_encoders(name):
    """The encoder form (test_tasks.py checks every task's decoder form)."""
    check_traced_equals_eager(tasks.get(name), False, pad_to=48)


@pytest.mark.parametrize("name", ["addition", "multiplication"])
def test_built_examples_read_back_as_the_sampled_batches(tmp_path, name):
    """The tfds builder of each task stores what evaluation samples (coords included)."""
    check_built_examples(name, tmp_path)
