"""The tasks of issue 25 (sort, multiplication, multi-query associative recall, local count)
against independent numpy reconstructions, their builders, and their errors."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pe_research import positions, tasks
from pe_research.config import EvalConfig, RunConfig, TrainConfig
from pe_research.data import builders, catalog, loader

SEEDS = (0, 1)


@functools.cache
def compiled_sampler(task, batch_size, length, causal):
    return jax.jit(lambda key: task.sample(key, batch_size, length, causal=causal))


def sample(task, seed, batch_size, length, causal=True):
    return jax.tree.map(np.asarray, compiled_sampler(task, batch_size, length, causal)(
        jax.random.key(seed)
    ))  # fmt: skip


def check_common(task, batch, causal, *, labelling=False):
    """Real tokens first, scored tokens among them, PAD targets after; decoders teacher forced
    (a labelling task's targets are labels, not next tokens), encoders blank what they score."""
    for b in range(batch.inputs.shape[0]):
        n_valid = int(batch.valid[b].sum())
        assert batch.valid[b][:n_valid].all() and not batch.valid[b][n_valid:].any()
        assert not (batch.loss_mask[b] & ~batch.valid[b]).any()
        assert (batch.targets[b][~batch.valid[b]] == task.pad).all()
        if labelling:
            continue
        if causal:
            np.testing.assert_array_equal(
                batch.targets[b][: n_valid - 1], batch.inputs[b][1:n_valid]
            )
        else:
            assert (batch.inputs[b][batch.loss_mask[b]] == task.blank).all()
            keep = ~batch.loss_mask[b]
            np.testing.assert_array_equal(batch.inputs[b][keep], batch.targets[b][keep])
    assert batch.inputs.max() < task.vocab_size and batch.targets.max() < task.vocab_size


def full_sequence(batch, b, causal):
    n_valid = int(batch.valid[b].sum())
    if causal:
        return np.append(batch.inputs[b][:n_valid], batch.targets[b][n_valid - 1])
    return batch.targets[b][:n_valid]


def scored_positions(answer_at, causal):
    """Where a sequence's answer tokens are scored: at the token before each in a decoder."""
    return np.asarray(answer_at) - (1 if causal else 0)


# -- sort ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("seed", SEEDS)
def test_sort_answers_the_sorted_prompt(seed, causal):
    task = tasks.get("sort", alphabet=6)
    batch = sample(task, seed, 32, 10, causal)
    check_common(task, batch, causal)
    lengths = set()
    for b in range(32):
        seq = full_sequence(batch, b, causal)
        n = int(np.argmax(seq == task.sep))
        lengths.add(n)
        assert len(seq) == 2 * n + 1 == task.seq_len(n, causal) + causal
        prompt, answer = seq[:n], seq[n + 1 :]
        assert prompt.max() < task.alphabet
        np.testing.assert_array_equal(answer, sorted(prompt.tolist()))
        answer_at = n + 1 + np.arange(n)
        np.testing.assert_array_equal(
            np.flatnonzero(batch.loss_mask[b]), scored_positions(answer_at, causal)
        )
    assert len(lengths) > 4


# -- multiplication --------------------------------------------------------------------------------


def value_of(digits, base=10):
    return sum(int(d) * base**k for k, d in enumerate(digits))


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("seed", SEEDS)
def test_multiplication_answers_the_product_with_digit_places(seed, causal):
    task = tasks.get("multiplication")
    batch = sample(task, seed, 32, 9, causal)
    check_common(task, batch, causal)
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


# -- multi-query associative recall ----------------------------------------------------------------


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("seed", SEEDS)
def test_mqar_recalls_the_value_of_every_key(seed, causal):
    task = tasks.get("mqar", alphabet=4, keys=12)
    batch = sample(task, seed, 32, 12, causal)
    check_common(task, batch, causal)
    lengths, orders = set(), set()
    for b in range(32):
        seq = full_sequence(batch, b, causal)
        n = int(np.argmax(seq == task.sep)) // 2
        lengths.add(n)
        assert len(seq) == 4 * n + 1 == task.seq_len(n, causal) + causal
        keys, values = seq[: 2 * n : 2], seq[1 : 2 * n : 2]
        queries, answers = seq[2 * n + 1 :: 2], seq[2 * n + 2 :: 2]
        assert len(set(keys.tolist())) == n, "keys are distinct"
        assert ((keys >= task.alphabet + 3) & (keys < task.vocab_size)).all()
        assert values.max() < task.alphabet
        assert sorted(queries.tolist()) == sorted(keys.tolist()), "every key asked once"
        lookup = dict(zip(keys.tolist(), values.tolist(), strict=True))
        np.testing.assert_array_equal(answers, [lookup[q] for q in queries.tolist()])
        orders.add(tuple(np.argsort(queries)))
        answer_at = 2 * n + 2 + 2 * np.arange(n)
        np.testing.assert_array_equal(
            np.flatnonzero(batch.loss_mask[b]), scored_positions(answer_at, causal)
        )
    assert len(lengths) > 4 and len(orders) > 4


def test_mqar_needs_as_many_keys_as_pairs():
    task = tasks.get("mqar", keys=10)
    assert task.seq_len(10, True) == 40
    with pytest.raises(ValueError, match="raise keys to at least 11"):
        task.seq_len(11, True)
    cfg = RunConfig(task=task, train=TrainConfig(train_length=8), eval=EvalConfig(lengths=(8, 16)))
    with pytest.raises(ValueError, match="there are keys=10 key tokens"):
        cfg.check()
    with pytest.raises(ValueError, match="mqar keys must be an integer >= 1"):
        tasks.get("mqar", keys=0)


# -- local count -----------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("seed", SEEDS)
def test_local_count_labels_each_token_with_its_count_in_its_run(seed, causal):
    task = tasks.get("local_count", alphabet=3, max_reps=5)
    batch = sample(task, seed, 32, 40, causal)
    check_common(task, batch, causal, labelling=True)
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


# -- shared ----------------------------------------------------------------------------------------

FIELD_TASKS = ["sort", "multiplication", "mqar", "local_count"]


@pytest.mark.parametrize("name", FIELD_TASKS)
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


@pytest.mark.parametrize("name", FIELD_TASKS)
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


# -- video (3-D positions for M-RoPE) --------------------------------------------------------------


@pytest.mark.parametrize("causal", [True, False])
def test_video_answers_the_shifted_volume_with_its_coordinates(causal):
    task = tasks.get("video", side=3, shift_frames=1, shift_rows=1, shift_cols=-1)
    batch = sample(task, 0, 16, 4, causal)
    # As grid's: every answer cell is asked for by a placeholder, scored where its source lies
    # in the video (the others' target is PAD).
    assert not (batch.loss_mask & ~batch.valid).any()
    assert batch.coords.shape == (*batch.inputs.shape, 3)
    for b in range(16):
        seq = batch.targets[b]
        n_valid = int(batch.valid[b].sum())
        cells = (n_valid - 1) // 2
        n = cells // 9
        assert n_valid == 2 * n * 9 + 1 == task.seq_len(n, causal) and seq[cells] == task.sep
        prompt = seq[:cells].reshape(n, 3, 3)
        answer = seq[cells + 1 : n_valid].reshape(n, 3, 3)
        scored = batch.loss_mask[b][cells + 1 : n_valid].reshape(n, 3, 3)
        assert (batch.inputs[b][cells + 1 : n_valid] == task.blank).all()
        np.testing.assert_array_equal(batch.inputs[b][: cells + 1], seq[: cells + 1])
        for t, r, c in np.ndindex(n, 3, 3):
            src = (t - 1, r - 1, c + 1)
            inside = 0 <= src[0] < n and 0 <= src[1] < 3 and 0 <= src[2] < 3
            assert scored[t, r, c] == inside
            assert answer[t, r, c] == (prompt[src] if inside else task.pad)
        grid = np.stack(np.meshgrid(np.arange(n), np.arange(3), np.arange(3), indexing="ij"), -1)
        np.testing.assert_array_equal(batch.coords[b, :cells], grid.reshape(-1, 3))
        np.testing.assert_array_equal(batch.coords[b, cells], [n, 0, 0])
        np.testing.assert_array_equal(batch.coords[b, cells + 1 : n_valid], grid.reshape(-1, 3))
        assert (batch.coords[b, n_valid:] == 0).all()
    # The mrope sampler passes the task's (frame, row, col) through, padding at 0.
    pos = np.asarray(positions.get("mrope").sample(jax.random.key(0), batch.valid, batch.coords))
    np.testing.assert_array_equal(pos, np.where(batch.valid[..., None], batch.coords, 0))


def test_video_shifts_off_the_frame_are_refused():
    with pytest.raises(ValueError, match="keep \\|shift_rows\\| and \\|shift_cols\\| below side"):
        tasks.get("video", side=2, shift_rows=2)
    with pytest.raises(ValueError, match="video side must be an integer >= 1"):
        tasks.get("video", side=0)
