"""Rearrangement tasks beside the copy, reverse, duplicate, count_copy and offset tests of
tests/test_tasks.py: sort against Python's sort, and its built evaluation set."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pe_research import tasks
from pe_research.data import builders, catalog, loader

SEEDS = (0, 1)


@functools.cache
def compiled_sampler(task, batch_size, length, causal):
    """One compiled program per task and shape, shared by the seeds, instead of eager ops."""
    return jax.jit(lambda key: task.sample(key, batch_size, length, causal=causal))


def sample(task, seed, batch_size, length, causal=True):
    fn = compiled_sampler(task, batch_size, length, causal)
    return jax.tree.map(np.asarray, fn(jax.random.key(seed)))


def check_common(task, batch, causal):
    """Real tokens first, scored tokens among them, PAD targets after; decoders teacher forced,
    encoders blank what they score."""
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
    assert batch.inputs.max() < task.vocab_size and batch.targets.max() < task.vocab_size


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


@pytest.mark.parametrize("name", ["sort"])
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


@pytest.mark.parametrize("name", ["sort"])
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
