"""Multi-query associative recall against a dictionary lookup: distinct keys, every key asked
once, the scored answers, the built evaluation set, and the errors."""

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

SEEDS = (0, 1)


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


@pytest.mark.parametrize("name", ["mqar"])
def test_traced_lengths_padded_to_one_width_equal_the_eager_batch_in_encoders(name):
    """The encoder form (test_tasks.py checks every task's decoder form)."""
    check_traced_equals_eager(tasks.get(name), False, pad_to=48)


@pytest.mark.parametrize("name", ["mqar"])
def test_built_examples_read_back_as_the_sampled_batches(tmp_path, name):
    """The tfds builder of each task stores what evaluation samples (coords included)."""
    check_built_examples(name, tmp_path)
