"""The training step: optimizer, loss, model state and the pure step function.

The NNX model is split once into a static graph definition and a parameter pytree; the step is a
pure function (state, groups) -> (state, metrics) of a batch that a separate pure sampler draws
on device from keys folded with the step number, so the loop never builds data on the host and
runs whose tasks differ but whose batches have the same shapes share one compiled step.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax.flatten_util import ravel_pytree

from pe_research.config import RunConfig, TrainConfig
from pe_research.metrics import masked_metrics
from pe_research.model import Transformer
from pe_research.tasks import Batch
from pe_research.training import hyperparameters


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
    linear to 0 at `steps`, or constant. The peak `cfg.learning_rate` may be a traced value
    (runs packed with different rates, training.hyperparameters): the shape of the schedule is
    built at peak 1 and scaled."""
    warmup = min(cfg.warmup_steps, cfg.steps - 1)
    if cfg.lr_schedule == "cosine":
        after = optax.cosine_decay_schedule(1.0, cfg.steps - warmup, alpha=0.1)
    elif cfg.lr_schedule == "linear":
        after = optax.linear_schedule(1.0, 0.0, cfg.steps - warmup)
    else:
        after = optax.constant_schedule(1.0)
    unit = optax.join_schedules([optax.linear_schedule(0.0, 1.0, warmup), after], [warmup])

    def schedule(count: jax.Array) -> jax.Array:
        return cfg.learning_rate * unit(count)

    return schedule


def make_optimizer(cfg: TrainConfig) -> optax.GradientTransformation:
    """AdamW (b2 = `cfg.adam_b2`) on `make_schedule`, with global-norm gradient clipping; weight
    decay on matrices (parameters of 2 or more axes) only, and not on the encoding's
    (parameters under a `pe` key) without `cfg.decay_encoding`. The learning rate, weight decay
    and clipping norm may be traced values.

    It runs on all parameters raveled into one vector (its state is one vector per moment):
    the same elementwise numbers as optax.adamw on the tree (the global norm up to float
    reassociation), in a few fused operations instead of several per parameter, which on CPU
    cost more than the arithmetic for small models.
    """
    schedule = make_schedule(cfg)
    adam = optax.chain(
        optax.clip_by_global_norm(cfg.grad_clip), optax.scale_by_adam(b2=cfg.adam_b2)
    )
    learning_rate = optax.scale_by_learning_rate(schedule)

    def init(params: Any) -> Any:
        return adam.init(ravel_pytree(params)[0]), learning_rate.init(None)

    def update(grads: Any, state: Any, params: Any) -> tuple[Any, Any]:
        g, unravel = ravel_pytree(grads)
        p = ravel_pytree(params)[0]
        decay = ravel_pytree(
            jax.tree_util.tree_map_with_path(
                lambda path, x: jnp.full(x.shape, x.ndim >= 2 and _decayed(path, cfg)), params
            )
        )[0]
        u, adam_state = adam.update(g, state[0], p)
        u = jnp.where(decay, u + cfg.weight_decay * p, u)
        u, lr_state = learning_rate.update(u, state[1])
        return unravel(u), (adam_state, lr_state)

    return optax.GradientTransformation(init, update)


def _decayed(path: tuple[Any, ...], cfg: TrainConfig) -> bool:
    """Whether the matrix at `path` takes weight decay: not an encoding's without
    cfg.decay_encoding (the model keeps encoding parameters under `pe`)."""
    keys = {str(getattr(k, "key", getattr(k, "name", k))) for k in path}
    return cfg.decay_encoding or "pe" not in keys


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


def make_batch_step(cfg: RunConfig, graphdef: nnx.GraphDef, batch_sharding: Any = None):
    """The pure, unjitted step (state, groups, values) -> (state, metrics) of one model, on a
    batch sampled outside it (`make_sampler`): (batch, pos_BL) per length bucket, and the
    model's packable numbers (`hyperparameters.values`: learning rate, encoding base, ...).

    It reads no task and no packable number of `cfg`: runs whose tasks give batches of the same
    shapes (copy and reverse), or that differ only in those numbers, share its compiled program
    (`program.program_key`). All groups go through the model in one pass (`Transformer.ragged`),
    and the loss is the mean over the scored tokens of all of them, as for one padded batch.
    `batch_sharding`, if given, constrains each group (data parallelism over devices).
    """

    def loss_fn(params: Any, groups: list[tuple[Batch, jax.Array]], encoding: Any, key: Any):
        model = nnx.merge(graphdef, params)
        if encoding is not None:
            model.set_encoding(encoding)
        logits_NV = model.ragged([(b.inputs, p, b.valid) for b, p in groups], dropout_key=key)
        # The mean over the scored tokens of all groups, as for one padded batch.
        batches = [b for b, _ in groups]
        flat = Batch(
            inputs=_rows([b.inputs for b in batches]),
            targets=_rows([b.targets for b in batches]),
            loss_mask=_rows([b.loss_mask for b in batches]),
            valid=_rows([b.valid for b in batches]),
        )
        return loss_and_metrics(logits_NV[None], flat)

    def step(state: TrainState, groups: list[tuple[Batch, jax.Array]], values: Any):
        run = hyperparameters.with_values(cfg, values)
        tx = make_optimizer(run.train)
        encoding = run.encoding if values["encoding"] else None
        if batch_sharding is not None:
            groups = [(jax.lax.with_sharding_constraint(b, batch_sharding), p) for b, p in groups]
        key = hyperparameters.dropout_key(values, state.step)
        grads, metrics = jax.grad(loss_fn, has_aux=True)(state.params, groups, encoding, key)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics["grad_norm"] = optax.tree.norm(grads)
        return TrainState(state.step + 1, params, opt_state), metrics

    return step


def _rows(xs_BL: list[jax.Array]) -> jax.Array:
    """The [B, L] arrays of the groups as one row [1, N] of all their tokens, in the order of
    `Transformer.ragged`."""
    return jnp.concatenate([x.reshape(-1) for x in xs_BL])[None]


def make_sampler(cfg: RunConfig):
    """The pure sampler (data_key, pos_key, step) -> groups of the training batch of `step`:
    `sample_groups` on the keys folded with the step number."""

    def sample(data_key: jax.Array, pos_key: jax.Array, step: jax.Array):
        return sample_groups(
            cfg, jax.random.fold_in(data_key, step), jax.random.fold_in(pos_key, step)
        )

    return sample


def make_step(cfg: RunConfig, graphdef: nnx.GraphDef, batch_sharding: Any = None):
    """The pure, unjitted step (state, data_key, pos_key) -> (state, metrics) of one model: the
    batch of `state.step` sampled (`make_sampler`), then `make_batch_step` on it.

    With `train.length_buckets` G > 1 the batch is sampled as G groups of lengths, each padded
    to its own width (`sample_groups`).
    """
    sample, update = make_sampler(cfg), make_batch_step(cfg, graphdef, batch_sharding)
    values = hyperparameters.values(cfg)

    def step(state: TrainState, data_key: jax.Array, pos_key: jax.Array):
        return update(state, sample(data_key, pos_key, state.step), values)

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
