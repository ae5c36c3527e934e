"""Rearrangement tasks beside the copy, reverse, duplicate, count_copy and offset tests of
tests/test_tasks.py: sort against Python's sort, its built evaluation set, the end token that
closes the answers of copy, reverse and duplicate, and the instance format of Kazemnejad et al.
(an instruction before the prompt, a separator of several tokens)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from task_checks import (
    check_built_examples,
    check_common,
    check_traced_equals_eager,
    full_sequence,
    sample,
    scored_positions,
)

from pe_research import encodings, tasks
from pe_research.config import ModelConfig
from pe_research.model import Transformer

SEEDS = (0, 1)


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
    check_traced_equals_eager(tasks.get(name), False, pad_to=48)


@pytest.mark.parametrize("name", ["sort"])
def test_built_examples_read_back_as_the_sampled_batches(tmp_path, name):
    """The tfds builder of each task stores what evaluation samples (coords included)."""
    check_built_examples(name, tmp_path)


# -- end tokens ------------------------------------------------------------------------------------


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


# -- the paper's instance format: an instruction before the prompt, a longer separator -------


@pytest.mark.parametrize(
    "task",
    [
        tasks.get("copy", end_token=True, prefix=2, separator=4),
        tasks.get("reverse", end_token=True, prefix=3, separator=2),
        tasks.get("count_copy", prefix=2, separator=4),
        tasks.get("count_copy", repeat=2, prefix=1),
    ],
    ids=lambda t: t.name,
)
def test_the_instance_format_against_a_numpy_reconstruction(task):
    batch = task.sample(jax.random.key(3), 6, 7, min_length=1)
    own = task.vocab_size - task.prefix - (task.separator - 1)
    for b in range(6):
        inputs, targets = np.asarray(batch.inputs[b]), np.asarray(batch.targets[b])
        scored = np.asarray(batch.loss_mask[b])
        k, r = task.prefix, task.separator
        n = int(np.flatnonzero(inputs == task.sep)[0]) - k  # the prompt's symbols
        prompt = inputs[k : k + n]
        if task.name == "count_copy":
            answer = np.full(task.repeat * n, prompt[0])
        else:
            answer = prompt if task.name == "copy" else prompt[::-1]
        want = np.concatenate([
            own + np.arange(k),                                   # the instruction
            prompt,
            [task.sep], own + k + np.arange(r - 1),               # the separator
            answer, [task.end],
        ])  # fmt: skip
        full = np.concatenate([inputs, targets[-1:]])[: len(want)]
        np.testing.assert_array_equal(full, want)
        # Scored: the targets of the last separator token on, i.e. the answer and END.
        assert scored.sum() == len(answer) + 1 and scored[k + n + r - 1]
        assert task.seq_len(n, True) >= len(want) - 1
    assert int(batch.inputs.max()) < task.vocab_size


def test_without_an_instruction_every_prompt_position_of_count_copy_looks_the_same():
    """Under NoPE (or any relative encoding) a prompt of one repeated symbol gives every prompt
    position the same hidden state, so the output there is the same: the model cannot tell
    where it is in the prompt. Distinct instruction tokens before it break that."""
    for prefix, same in ((0, True), (2, False)):
        task = tasks.get("count_copy", prefix=prefix, separator=4 if prefix else 1)
        model = Transformer(ModelConfig(num_layers=2, d_model=32, num_heads=4), encodings.get(
            "nope"), task.vocab_size, rngs=nnx.Rngs(0))  # fmt: skip
        batch = task.sample(jax.random.key(0), 2, 8, min_length=8)
        pos = jnp.broadcast_to(jnp.arange(batch.inputs.shape[1]), batch.inputs.shape)
        logits = model(batch.inputs, pos)
        prompt = np.asarray(logits[:, prefix : prefix + 8])
        spread = np.abs(prompt - prompt[:, :1]).max()
        assert (spread < 1e-5) == same, spread
    with pytest.raises(ValueError, match="Task 'byte_lm' has no option.*prefix"):
        tasks.get("byte_lm", prefix=2)
    with pytest.raises(ValueError, match="separator must be an integer >= 1"):
        tasks.get("copy", separator=0).check()
