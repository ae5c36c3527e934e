"""Length buckets (no compute on padding), several steps per dispatch: same numbers, less work."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from pe_research import encodings, runs, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.tasks import Batch
from pe_research.training import checkpoints
from pe_research.training.step import padded_tokens, sample_groups

TIMING = {"tokens_per_s", "elapsed_s", "compile_s", "seconds"}
MODEL = ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32)


def config(encoding="rope", task="copy", causal=True, **train_options):
    train_cfg = TrainConfig(batch_size=8, train_length=8, steps=4, log_every=2)
    return RunConfig(
        task=tasks.get(task),
        encoding=encodings.get(encoding),
        model=dataclasses.replace(MODEL, causal=causal),
        train=dataclasses.replace(train_cfg, **train_options),
        eval=EvalConfig(lengths=(8,), batch_size=4),
    )


def pad(batch: Batch, pos_BL: jax.Array, width: int) -> tuple[Batch, jax.Array]:
    """The same sequences padded to `width` (padding tokens invalid, unscored, at position 0)."""
    extra = width - batch.inputs.shape[1]

    def widen(x, value):
        return jnp.pad(x, [(0, 0), (0, extra)] + [(0, 0)] * (x.ndim - 2), constant_values=value)

    wide = Batch(
        widen(batch.inputs, 0), widen(batch.targets, 0), widen(batch.loss_mask, False),
        widen(batch.valid, False), None,
    )  # fmt: skip
    return wide, widen(pos_BL, 0)


@jax.jit
def per_sequence_nll(graphdef, params, batch: Batch, pos_BL: jax.Array) -> jax.Array:
    logits_BLV = nnx.merge(graphdef, params)(batch.inputs, pos_BL, batch.valid)
    nll_BL = optax.softmax_cross_entropy_with_integer_labels(logits_BLV, batch.targets)
    return jnp.where(batch.loss_mask, nll_BL, 0.0).sum(axis=1)


# Hooks that see every key (CoPE's gate counts, T5's buckets, ALiBi's distances) and a learned
# table, decoder and encoder form: padding keys must change none of them.
@pytest.mark.parametrize(
    ("encoding", "causal"), [("rope", True), ("cope", True), ("t5", False), ("alibi", False)]
)
def test_each_sequence_scores_the_same_in_its_bucket_as_padded_to_the_widest(encoding, causal):
    cfg = config(encoding, causal=causal, length_buckets=4)
    model = train.init_model(cfg, jax.random.key(0))
    groups = sample_groups(cfg, jax.random.key(1), jax.random.key(2))
    widest = cfg.task.seq_len(cfg.train.train_length, causal)
    assert [b.inputs.shape for b, _ in groups] == [
        (2, cfg.task.seq_len(hi, causal)) for _, hi in cfg.train.length_ranges()
    ]
    for batch, pos_BL in groups:
        alone = per_sequence_nll(*model, batch, pos_BL)
        padded = per_sequence_nll(*model, *pad(batch, pos_BL, widest))
        np.testing.assert_allclose(alone, padded, rtol=2e-5, atol=1e-6)


def test_buckets_stratify_lengths_and_one_bucket_is_the_plain_batch():
    cfg = config(length_buckets=4)
    counts = np.zeros(9, int)
    for step in range(20):
        groups = sample_groups(cfg, jax.random.key(step), jax.random.key(-step))
        for (shortest, longest), (batch, _) in zip(cfg.train.length_ranges(), groups, strict=True):
            n_B = (np.asarray(batch.loss_mask).sum(axis=1)).astype(int)  # copy: n answer tokens
            assert len(n_B) == 2 and ((n_B >= shortest) & (n_B <= longest)).all()
            np.add.at(counts, n_B, 1)
    assert (counts[1:] > 0).all()  # every length of 1..8 is drawn
    # One bucket draws exactly the batch the task samples on its own, with the keys as given.
    plain = config()
    ((batch, pos_BL),) = sample_groups(plain, jax.random.key(5), jax.random.key(6))
    expected = plain.task.sample(jax.random.key(5), 8, 8, causal=True)
    for x, y in zip(batch, expected, strict=True):
        np.testing.assert_array_equal(x, y) if x is not None else None
    assert padded_tokens(cfg) < padded_tokens(plain) == 8 * plain.task.seq_len(8, True)


def test_bucketed_training_resumes_bit_identically_and_learns(tmp_path):
    cfg = config("rope", length_buckets=2, steps=40, log_every=10, steps_per_dispatch=2)
    reference, run = tmp_path / "reference", tmp_path / "run"
    train.train(cfg, reference, progress=False, checkpoint_every=10)
    train.train(cfg, run, progress=False, checkpoint_every=10)
    (run / runs.DONE).unlink()  # as if killed after the checkpoint of step 20
    checkpoints.discard_after(run, 20)
    train.train(cfg, run, progress=False, checkpoint_every=10)

    def rows(path):
        return [{k: v for k, v in r.items() if k not in TIMING} for r in runs.read_jsonl(path)]

    assert rows(run / runs.METRICS) == rows(reference / runs.METRICS)
    assert rows(run / runs.EVAL) == rows(reference / runs.EVAL)
    losses = [r["loss"] for r in rows(run / runs.METRICS)]
    assert losses[-1] < losses[0]


def test_several_steps_per_dispatch_equal_one_step_at_a_time():
    one = config("alibi", steps=6, log_every=6)
    three = dataclasses.replace(one, train=dataclasses.replace(one.train, steps_per_dispatch=3))
    prog_one, prog_three = train.build_program(one, [0]), train.build_program(three, [0])
    state = prog_one.state
    for _ in range(6):
        state, metrics = prog_one.run(state)
    state3 = prog_three.state
    for _ in range(2):
        state3, metrics3 = prog_three.run(state3)
    assert metrics3["loss"].shape == (3, 1)  # [steps of the call, models]
    np.testing.assert_allclose(metrics3["loss"][-1], metrics["loss"], rtol=1e-6)
    for a, b in zip(jax.tree.leaves(state.params), jax.tree.leaves(state3.params), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"length_buckets": 3}, "length_buckets=3 must divide both train_length=8"),
        ({"length_buckets": 0}, "length_buckets must be >= 1"),
        ({"steps_per_dispatch": 3}, "steps_per_dispatch=3 must be >= 1 and divide steps=4"),
    ],
)
def test_impossible_bucket_or_dispatch_options_say_what_to_do(options, message):
    with pytest.raises(ValueError, match=message):
        config(**options).check()


def test_checkpoint_interval_must_be_a_multiple_of_the_steps_per_dispatch(tmp_path):
    cfg = config(steps=4, log_every=2, steps_per_dispatch=2)
    with pytest.raises(ValueError, match="--checkpoint-every to a multiple"):
        train.train(cfg, tmp_path / "run", progress=False, checkpoint_every=3)


def test_a_task_of_fixed_length_has_nothing_to_bucket(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(bytes(range(256)) * 8)
    cfg = dataclasses.replace(
        config(length_buckets=2), task=tasks.get("byte_lm", corpus=str(corpus))
    )
    with pytest.raises(ValueError, match="drop --train.length-buckets"):
        cfg.check()
