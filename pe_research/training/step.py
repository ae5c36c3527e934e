"""The training step: optimizer, loss, model state and the pure step function.

The NNX model is split once into a static graph definition and a parameter pytree; the step is a
pure function (state, data_key, pos_key) -> (state, metrics). Batches and positions are sampled
on device inside the step from keys folded with the step number, so the loop never builds data
on the host.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from pe_research.config import RunConfig, TrainConfig
from pe_research.metrics import masked_metrics
from pe_research.model import Transformer
from pe_research.tasks import Batch


class TrainState(NamedTuple):
    step: jax.Array
    params: Any  # nnx.State of the model's parameters
    opt_state: Any


class Keys(NamedTuple):
    """One seed, split by purpose, so changing one stream never shifts another."""

    init: jax.Array
    data: jax.Array
    positions: jax.Array


def keys_from_seed(seed: int) -> Keys:
    return Keys(*jax.random.split(jax.random.key(seed), 3))


def make_schedule(cfg: TrainConfig) -> optax.Schedule:
    """Linear warm-up from 0, then `cfg.lr_schedule`: cosine to 10% of the peak at `steps`,
    linear to 0 at `steps`, or constant."""
    peak, warmup = cfg.learning_rate, min(cfg.warmup_steps, cfg.steps - 1)
    if cfg.lr_schedule == "cosine":
        return optax.warmup_cosine_decay_schedule(
            init_value=0.0,
            peak_value=peak,
            warmup_steps=warmup,
            decay_steps=cfg.steps,
            end_value=0.1 * peak,
        )
    after = (
        optax.linear_schedule(peak, 0.0, cfg.steps - warmup)
        if cfg.lr_schedule == "linear"
        else optax.constant_schedule(peak)
    )
    return optax.join_schedules([optax.linear_schedule(0.0, peak, warmup), after], [warmup])


def make_optimizer(cfg: TrainConfig) -> optax.GradientTransformation:
    """AdamW on `make_schedule`, with global-norm gradient clipping."""
    schedule = make_schedule(cfg)

    def decay_matrices(params: Any) -> Any:
        return jax.tree.map(lambda p: p.ndim >= 2, params)

    return optax.chain(
        optax.clip_by_global_norm(cfg.grad_clip),
        optax.adamw(schedule, b2=cfg.adam_b2, weight_decay=cfg.weight_decay, mask=decay_matrices),
    )


TRAIN_METRICS = ("loss", "token_accuracy")
"""The metrics of `masked_metrics` logged at each training step (metrics.jsonl)."""


def loss_and_metrics(logits_BLV: jax.Array, batch: Batch) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Mean cross entropy, and the TRAIN_METRICS, over the scored positions."""
    out = masked_metrics(logits_BLV, batch.targets, batch.loss_mask)
    return out["loss"], {name: out[name] for name in TRAIN_METRICS}


def init_model(cfg: RunConfig, key: jax.Array) -> tuple[nnx.GraphDef, Any]:
    """The model's graph definition (static) and parameters (a pytree)."""
    model = Transformer(cfg.model, cfg.encoding, cfg.task.vocab_size, rngs=nnx.Rngs(params=key))
    return nnx.split(model)


def init_state(cfg: RunConfig, keys: Keys) -> tuple[nnx.GraphDef, TrainState]:
    graphdef, params = init_model(cfg, keys.init)
    opt_state = make_optimizer(cfg.train).init(params)
    return graphdef, TrainState(jnp.zeros((), jnp.int32), params, opt_state)


def make_step(cfg: RunConfig, graphdef: nnx.GraphDef, batch_sharding: Any = None):
    """The pure, unjitted step (state, data_key, pos_key) -> (state, metrics) of one model.

    With `train.length_buckets` G > 1 the batch is sampled as G groups of lengths, each padded
    to its own width (`sample_groups`), and the loss is the mean over the scored tokens of all
    groups, as for one padded batch. `batch_sharding`, if given, constrains each sampled group
    (data parallelism over devices).
    """
    tx = make_optimizer(cfg.train)

    def loss_fn(params: Any, groups: list[tuple[Batch, jax.Array]]):
        model = nnx.merge(graphdef, params)
        if len(groups) == 1:
            ((batch, pos_BL),) = groups
            return loss_and_metrics(model(batch.inputs, pos_BL, batch.valid), batch)
        # Each group's means, weighted by its scored tokens: the mean over the whole batch.
        counts = [jnp.maximum(b.loss_mask.sum(), 1).astype(jnp.float32) for b, _ in groups]
        parts = [loss_and_metrics(model(b.inputs, p, b.valid), b)[1] for b, p in groups]
        weights = [c / sum(counts) for c in counts]
        metrics = {
            m: sum(w * part[m] for w, part in zip(weights, parts, strict=True)) for m in parts[0]
        }
        return metrics["loss"], metrics

    def step(state: TrainState, data_key: jax.Array, pos_key: jax.Array):
        groups = sample_groups(
            cfg, jax.random.fold_in(data_key, state.step), jax.random.fold_in(pos_key, state.step)
        )
        if batch_sharding is not None:
            groups = [(jax.lax.with_sharding_constraint(b, batch_sharding), p) for b, p in groups]
        grads, metrics = jax.grad(loss_fn, has_aux=True)(state.params, groups)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics["grad_norm"] = optax.tree.norm(grads)
        return TrainState(state.step + 1, params, opt_state), metrics

    return step


def sample_groups(
    cfg: RunConfig, data_key: jax.Array, pos_key: jax.Array
) -> list[tuple[Batch, jax.Array]]:
    """One training batch as (batch, pos_BL) per length bucket, shortest lengths first.

    One bucket: batch_size sequences of 1..train_length symbols, padded to the widest (the keys
    used as given). G buckets: batch_size / G sequences per range of `train.length_ranges()`,
    each group padded only to the widest length of its range (keys folded with the bucket).
    """
    task, sampler, causal, train = cfg.task, cfg.positions, cfg.model.causal, cfg.train
    if train.length_buckets == 1:
        keys = [(data_key, pos_key)]
    else:
        keys = [
            (jax.random.fold_in(data_key, g), jax.random.fold_in(pos_key, g))
            for g in range(train.length_buckets)
        ]
    groups = []
    per_group = train.batch_size // train.length_buckets
    for (k_data, k_pos), (shortest, longest) in zip(keys, train.length_ranges(), strict=True):
        batch = task.sample(k_data, per_group, longest, min_length=shortest, causal=causal)
        groups.append((batch, sampler.sample(k_pos, batch.valid, coords_BLA=batch.coords)))
    return groups


def bucket_widths(cfg: RunConfig) -> list[int]:
    """The padded width of each length bucket's sequences, shortest first."""
    return [cfg.task.seq_len(n, cfg.model.causal) for _, n in cfg.train.length_ranges()]


def padded_tokens(cfg: RunConfig) -> int:
    """Token positions one training step computes per model, padding included."""
    per_bucket = cfg.train.batch_size // cfg.train.length_buckets
    return per_bucket * sum(bucket_widths(cfg))


def make_train_step(cfg: RunConfig, graphdef: nnx.GraphDef):
    """The step of one model, jitted with its state donated."""
    return jax.jit(make_step(cfg, graphdef), donate_argnums=0)
