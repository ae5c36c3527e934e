"""Task invariants: answers are what the task says, masks cover exactly the answer span."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pe_research import tasks

KEY = jax.random.key(0)


def rows(batch):
    return [np.asarray(a) for a in batch]


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
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.inputs, c.inputs)


@pytest.mark.parametrize("name", tasks.names())
def test_traced_length_under_jit_matches_eager(name):
    task = tasks.get(name)

    @jax.jit
    def fixed_length(key, n):
        return task.sample(key, 4, n, min_length=n, pad_to=32)

    traced = fixed_length(KEY, jnp.int32(5))
    eager = task.sample(KEY, 4, 5, min_length=5, pad_to=32)
    for x, y in zip(traced, eager, strict=True):
        np.testing.assert_array_equal(x, y)
    assert traced.inputs.shape == (4, 32)
    assert (traced.valid.sum(axis=1) == task.seq_len(5, causal=True)).all()


def test_bad_input_names_the_choices():
    with pytest.raises(ValueError, match="Known tasks: copy, reverse, offset"):
        tasks.get("sort")
    with pytest.raises(ValueError, match="no option"):
        tasks.get("copy", k=2)
    with pytest.raises(ValueError, match="k must be >= 1"):
        tasks.get("offset", k=0)
    with pytest.raises(ValueError, match="raise pad_to"):
        tasks.get("copy").sample(KEY, 2, 10, pad_to=8)
