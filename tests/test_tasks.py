"""Task invariants: answers are what the task says, masks cover exactly the answer span."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pe_research import positions, tasks

KEY = jax.random.key(0)


def rows(batch):
    """inputs, targets, loss_mask, valid as numpy arrays (coords apart: see the grid tests)."""
    return [np.asarray(a) for a in batch[:4]]


def jit_sample(task, batch_size, length, causal=True):
    """One compiled program instead of many eager ops: keeps the tests fast."""
    return jax.jit(lambda key: task.sample(key, batch_size, length, causal=causal))(KEY)


def sample(task, seed, batch_size, length, causal=True):
    """A batch as numpy arrays, sampled by one compiled program."""
    fn = jax.jit(lambda key: task.sample(key, batch_size, length, causal=causal))
    return jax.tree.map(np.asarray, fn(jax.random.key(seed)))


def assert_same_batch(a, b):
    for x, y in zip(a, b, strict=True):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_array_equal(x, y)


def split_prompt_answer(task, inputs, targets, loss_mask):
    """The data symbols before SEP and the scored targets of one decoder row."""
    sep = int(np.argmax(inputs == task.sep))
    return inputs[:sep], targets[loss_mask]


@pytest.mark.parametrize("name", ["copy", "reverse"])
def test_prompt_answer_tasks(name):
    task = tasks.get(name, alphabet=5)
    inputs, targets, loss_mask, valid = rows(task.sample(KEY, 64, 9))
    assert inputs.shape == (64, task.seq_len(9, causal=True)) == (64, 18)
    seen_lengths = set()
    for b in range(64):
        prompt, answer = split_prompt_answer(task, inputs[b], targets[b], loss_mask[b])
        n = len(prompt)
        seen_lengths.add(n)
        assert 1 <= n <= 9
        assert prompt.max() < task.alphabet
        expected = prompt if name == "copy" else prompt[::-1]
        np.testing.assert_array_equal(answer, expected)
        # The scored span is exactly the n positions from SEP on (each predicting the next token).
        np.testing.assert_array_equal(np.flatnonzero(loss_mask[b]), np.arange(n, 2 * n))
        np.testing.assert_array_equal(np.flatnonzero(valid[b]), np.arange(2 * n))
        # Teacher forcing: targets are the inputs shifted left by one.
        np.testing.assert_array_equal(targets[b][: 2 * n - 1], inputs[b][1 : 2 * n])
    assert len(seen_lengths) > 3  # lengths are drawn per sequence


def test_reverse_of_reverse_is_identity():
    task = tasks.get("reverse")
    inputs, targets, loss_mask, _ = rows(task.sample(KEY, 16, 12))
    for b in range(16):
        prompt, answer = split_prompt_answer(task, inputs[b], targets[b], loss_mask[b])
        np.testing.assert_array_equal(answer[::-1][::-1], answer)
        np.testing.assert_array_equal(answer[::-1], prompt)


@pytest.mark.parametrize("name", ["copy", "reverse"])
def test_encoder_batches_hide_the_answer(name):
    task = tasks.get(name)
    inputs, targets, loss_mask, valid = rows(task.sample(KEY, 32, 7, causal=False))
    assert inputs.shape[1] == task.seq_len(7, causal=False) == 15
    for b in range(32):
        n = int(np.argmax(inputs[b] == task.sep))
        np.testing.assert_array_equal(np.flatnonzero(loss_mask[b]), np.arange(n + 1, 2 * n + 1))
        assert (inputs[b][loss_mask[b]] == task.blank).all()
        prompt = inputs[b][:n]
        expected = prompt if name == "copy" else prompt[::-1]
        np.testing.assert_array_equal(targets[b][loss_mask[b]], expected)
        assert valid[b].sum() == 2 * n + 1


def test_offset_targets_look_back_k():
    task = tasks.get("offset", k=3)
    inputs, targets, loss_mask, valid = rows(task.sample(KEY, 32, 10))
    for b in range(32):
        n = int(valid[b].sum())
        np.testing.assert_array_equal(np.flatnonzero(loss_mask[b]), np.arange(3, n))
        np.testing.assert_array_equal(targets[b][3:n], inputs[b][: max(n - 3, 0)])


def test_offset_with_prompted_k():
    task = tasks.get("offset", k=1, k_max=4)
    inputs, targets, loss_mask, valid = rows(task.sample(KEY, 64, 10))
    seen_k = set()
    for b in range(64):
        k = int(inputs[b][0]) - task.offset_token(0)
        seen_k.add(k)
        assert 1 <= k <= 4
        stream = inputs[b][1 : int(valid[b].sum())]
        n = len(stream)
        np.testing.assert_array_equal(np.flatnonzero(loss_mask[b]), 1 + np.arange(k, n))
        np.testing.assert_array_equal(targets[b][1 + k : 1 + n], stream[: max(n - k, 0)])
    assert seen_k == {1, 2, 3, 4}
    assert inputs.max() < task.vocab_size


@pytest.mark.parametrize("name", tasks.names())
def test_same_key_same_batch(name):
    task = tasks.get(name)
    a, b = task.sample(KEY, 8, 6), task.sample(KEY, 8, 6)
    c = task.sample(jax.random.key(1), 8, 6)
    assert_same_batch(a, b)
    assert not np.array_equal(a.inputs, c.inputs)
    assert (a.coords is None) == (task.position_axes is None)


@pytest.mark.parametrize("name", tasks.names())
def test_traced_length_under_jit_matches_eager(name):
    task = tasks.get(name)
    pad_to = max(64, task.seq_len(5, causal=True) + 3)  # a video of 5 frames needs 91

    @jax.jit
    def fixed_length(key, n):
        return task.sample(key, 4, n, min_length=n, pad_to=pad_to)

    traced = fixed_length(KEY, jnp.int32(5))
    eager = task.sample(KEY, 4, 5, min_length=5, pad_to=pad_to)
    assert_same_batch(traced, eager)
    assert traced.inputs.shape == (4, pad_to)
    assert (traced.valid.sum(axis=1) == task.seq_len(5, causal=True)).all()


def test_bad_input_names_the_choices():
    with pytest.raises(
        ValueError, match="Known tasks: copy, reverse, offset, duplicate, count_copy, grid"
    ):
        tasks.get("shuffle")
    with pytest.raises(ValueError, match="no option"):
        tasks.get("copy", k=2)
    with pytest.raises(ValueError, match="k must be >= 1"):
        tasks.get("offset", k=0)
    with pytest.raises(ValueError, match="raise pad_to"):
        tasks.get("copy").sample(KEY, 2, 10, pad_to=8)
    with pytest.raises(ValueError, match="repeat must be an integer >= 1"):
        tasks.get("count_copy", repeat=0)
    with pytest.raises(ValueError, match="shift_cols must be an integer"):
        tasks.get("grid", shift_cols=1.5)


@pytest.mark.parametrize("causal", [True, False])
def test_duplicate_answers_the_prompt_twice(causal):
    task = tasks.get("duplicate", alphabet=5)
    inputs, targets, loss_mask, valid = rows(jit_sample(task, 32, 6, causal=causal))
    assert inputs.shape[1] == task.seq_len(6, causal) == (18 if causal else 19)
    for b in range(32):
        n = int(np.argmax(inputs[b] == task.sep))
        prompt, start = inputs[b][:n], n if causal else n + 1
        np.testing.assert_array_equal(np.flatnonzero(loss_mask[b]), start + np.arange(2 * n))
        np.testing.assert_array_equal(targets[b][loss_mask[b]], np.concatenate([prompt, prompt]))
        assert valid[b].sum() == 3 * n + (0 if causal else 1)
        if causal:
            np.testing.assert_array_equal(targets[b][: 3 * n - 1], inputs[b][1 : 3 * n])
        else:
            assert (inputs[b][loss_mask[b]] == task.blank).all()


@pytest.mark.parametrize("repeat", [1, 2])
def test_count_copy_repeats_one_symbol_then_ends(repeat):
    task = tasks.get("count_copy", alphabet=5, repeat=repeat)
    inputs, targets, loss_mask, valid = rows(jit_sample(task, 32, 7))
    assert task.vocab_size == 9 and inputs.shape[1] == task.seq_len(7, True) == 7 * (1 + repeat) + 1
    symbols = set()
    for b in range(32):
        n = int(np.argmax(inputs[b] == task.sep))
        a = inputs[b][0]
        symbols.add(int(a))
        assert (inputs[b][:n] == a).all()
        m = repeat * n + 1
        np.testing.assert_array_equal(np.flatnonzero(loss_mask[b]), n + np.arange(m))
        np.testing.assert_array_equal(targets[b][loss_mask[b]], [a] * (m - 1) + [task.end])
        assert valid[b].sum() == n + m
    assert len(symbols) > 1  # one symbol per sequence, not one per batch


def test_count_copy_encoder_asks_for_the_end_at_the_last_placeholder():
    task = tasks.get("count_copy", alphabet=5)
    inputs, targets, loss_mask, valid = rows(jit_sample(task, 8, 5, causal=False))
    for b in range(8):
        n = int(np.argmax(inputs[b] == task.sep))
        answer = targets[b][loss_mask[b]]
        assert (
            len(answer) == n + 1 and answer[-1] == task.end and (answer[:-1] == inputs[b][0]).all()
        )
        assert (inputs[b][loss_mask[b]] == task.blank).all()


@pytest.mark.parametrize(("shift", "causal"), [((1, 1), True), ((1, 1), False), ((2, -1), True)])
def test_grid_answer_is_the_shifted_grid_with_its_coordinates(shift, causal):
    task = tasks.get("grid", alphabet=6, shift_rows=shift[0], shift_cols=shift[1])
    batch = jit_sample(task, 16, 4, causal=causal)
    inputs, targets, loss_mask, valid = rows(batch)
    coords = np.asarray(batch.coords)
    assert inputs.shape == (16, task.seq_len(4, causal)) == (16, 33)
    assert coords.shape == (16, 33, 2) and coords.dtype == np.int32
    sides = set()
    for b in range(16):
        cells = int(np.argmax(inputs[b] == task.sep))
        n = int(round(cells**0.5))
        sides.add(n)
        assert n * n == cells and valid[b].sum() == 2 * cells + 1
        grid = inputs[b][:cells].reshape(n, n)
        rows_, cols_ = np.divmod(np.arange(cells), n)
        # Prompt and answer cells carry their own (row, col); SEP sits on the row below.
        np.testing.assert_array_equal(coords[b][:cells], np.stack([rows_, cols_], -1))
        np.testing.assert_array_equal(coords[b][cells], [n, 0])
        np.testing.assert_array_equal(coords[b][cells + 1 : 2 * cells + 1], coords[b][:cells])
        assert (coords[b][2 * cells + 1 :] == 0).all()
        answer = slice(cells + 1, 2 * cells + 1)
        assert (inputs[b][answer] == task.blank).all()
        src_r, src_c = rows_ - shift[0], cols_ - shift[1]
        on = (src_r >= 0) & (src_r < n) & (src_c >= 0) & (src_c < n)
        np.testing.assert_array_equal(np.flatnonzero(loss_mask[b]), cells + 1 + np.flatnonzero(on))
        np.testing.assert_array_equal(targets[b][answer][on], grid[src_r[on], src_c[on]])
        assert (targets[b][answer][~on] == task.pad).all()
    assert len(sides) > 2


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
