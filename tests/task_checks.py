"""Checks the task tests share: batches sampled by one compiled program, the properties every
batch has, a row's whole sequence, and traced lengths against eager sampling."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from pe_research import tasks
from pe_research.data import builders, catalog, loader


@functools.cache
def compiled_sampler(task, batch_size, length, causal):
    """One compiled program per task and shape, shared by the seeds, instead of eager ops."""
    return jax.jit(lambda key: task.sample(key, batch_size, length, causal=causal))


def sample(task, seed, batch_size, length, causal=True):
    """A batch as numpy arrays."""
    fn = compiled_sampler(task, batch_size, length, causal)
    return jax.tree.map(np.asarray, fn(jax.random.key(seed)))


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
    assert batch.inputs.max() < task.vocab_size
    assert labelling or batch.targets.max() < task.vocab_size


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


def check_traced_equals_eager(task, causal, pad_to):
    """Lengths 3 and 7 as traced values, padded to one width, give the eager batches: the same
    arrays, seq_len valid tokens, and padding that is not the blank."""

    @jax.jit
    def traced(key, n):
        return task.sample(key, 4, n, min_length=n, pad_to=pad_to, causal=causal)

    for n in (3, 7):
        a = traced(jax.random.key(n), jnp.int32(n))
        b = task.sample(jax.random.key(n), 4, n, min_length=n, pad_to=pad_to, causal=causal)
        for x, y in zip(a, b, strict=True):
            assert (x is None) == (y is None)
            if x is not None:
                np.testing.assert_array_equal(x, y)
        assert a.inputs.shape == (4, pad_to)
        assert (np.asarray(a.valid).sum(axis=1) == task.seq_len(n, causal)).all()
        assert (np.asarray(a.inputs)[~np.asarray(a.valid)] != task.blank).all()


def check_built_examples(name, data_dir):
    """The tfds builder of task `name` stores what evaluation samples (coords included)."""
    config = builders.TaskConfig(name="tiny", lengths=(3, 5), per_length=4)
    catalog.build(name, config, data_dir=data_dir)
    eval_set = loader.EvalSet(f"tfds:pe_{name}/tiny", data_dir)
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
