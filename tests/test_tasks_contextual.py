"""The contextual-position tasks (flip-flop, selective copy, counting, local count) against
independent numpy reconstructions: answers, scored spans, option frequencies, the built evaluation
sets, and the errors."""

import numpy as np
import pytest
from task_checks import (
    check_built_examples,
    check_common,
    check_traced_equals_eager,
    full_sequence,
    sample,
)

from pe_research import tasks

SEEDS = (0, 1, 2)


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


# -- local count -----------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("seed", SEEDS[:2])
def test_local_count_labels_each_token_with_its_count_in_its_run(seed, causal):
    task = tasks.get("local_count", alphabet=3, max_reps=5)
    batch = sample(task, seed, 32, 40, causal)
    check_common(task, batch, causal, labelling=True)
    assert batch.targets.max() < task.vocab_size
    run_lengths, lengths = [], set()
    for b in range(32):
        n = int(batch.valid[b].sum()) - 2
        lengths.add(n)
        # SEP (the start), the stream, END; only the stream is scored.
        assert batch.inputs[b][0] == task.sep and batch.inputs[b][n + 1] == task.end
        stream = batch.inputs[b][1 : n + 1]
        assert stream.max() < task.alphabet
        # Runs: maximal blocks of one symbol (consecutive runs differ, so blocks are runs).
        edges = np.flatnonzero(np.diff(stream)) + 1
        runs = np.split(np.arange(n), edges)
        expected = np.concatenate([np.arange(len(r)) for r in runs])
        np.testing.assert_array_equal(batch.targets[b][1 : n + 1], task.count_token(expected))
        np.testing.assert_array_equal(np.flatnonzero(batch.loss_mask[b]), np.arange(1, n + 1))
        run_lengths += [len(r) for r in runs[:-1]]  # the last run may be cut short
    assert set(run_lengths) == {2, 3, 4, 5}
    assert len(lengths) > 4
    # The same stream in both forms: the labels never depend on later tokens.
    other = sample(task, seed, 32, 40, not causal)
    np.testing.assert_array_equal(batch.inputs, other.inputs)


@pytest.mark.parametrize("causal", [True, False])
def test_local_count_without_bos_eos_is_the_bare_stream(causal):
    """bos_eos=False drops the two markers and nothing else: the same runs, labels and masks."""
    task = tasks.get("local_count", alphabet=3, max_reps=5)
    bare = tasks.get("local_count", alphabet=3, max_reps=5, bos_eos=False)
    marked, plain = sample(task, 0, 16, 20, causal), sample(bare, 0, 16, 20, causal)
    check_common(bare, plain, causal, labelling=True)
    assert plain.targets.max() < bare.vocab_size
    for b in range(16):
        n = int(plain.valid[b].sum())
        assert int(marked.valid[b].sum()) == n + 2 == task.seq_len(n, causal)
        for marked_L, plain_L in [(marked.inputs, plain.inputs), (marked.targets, plain.targets)]:
            np.testing.assert_array_equal(marked_L[b][1 : n + 1], plain_L[b][:n])
        np.testing.assert_array_equal(plain.loss_mask[b], plain.valid[b])


def test_local_count_refuses_bad_options():
    with pytest.raises(ValueError, match="max_reps must be an integer >= 2"):
        tasks.get("local_count", max_reps=1)
    with pytest.raises(ValueError, match="bos_eos must be true or false"):
        tasks.get("local_count", bos_eos="yes")


# -- padding, traced lengths and built sets --------------------------------------------------------


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize(
    "task",
    [
        tasks.get("flip_flop", p_ignore=0.5),
        tasks.get("selective_copy", noise_percent=150),
        tasks.get("counting"),
    ],
    ids=lambda t: f"{t.name}{int(getattr(t, 'index_hints', 0))}",
)
def test_traced_lengths_padded_to_one_width_equal_the_eager_batch(task, causal):
    check_traced_equals_eager(task, causal, pad_to=80)


@pytest.mark.parametrize("name", ["local_count"])
def test_traced_lengths_padded_to_one_width_equal_the_eager_batch_in_encoders(name):
    """The encoder form (test_tasks.py checks every task's decoder form)."""
    check_traced_equals_eager(tasks.get(name), False, pad_to=48)


@pytest.mark.parametrize("name", ["flip_flop", "selective_copy", "counting", "local_count"])
def test_built_examples_read_back_as_the_sampled_batches(tmp_path, name):
    """The tfds builder of each task stores what evaluation samples (coords included)."""
    check_built_examples(name, tmp_path)
