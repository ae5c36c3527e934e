"""S packed models as one compiled program: runs that differ only in their seed train together,
their state stacked on a leading model axis and their step under jax.vmap, spread over the local
devices."""

from __future__ import annotations

import dataclasses
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from pe_research.config import EvalConfig, RunConfig
from pe_research.model import abstract_model
from pe_research.training.step import (
    TrainState,
    init_model,
    keys_from_seed,
    make_optimizer,
    make_step,
)


def group_key(cfg: RunConfig) -> RunConfig:
    """What runs trained together share: everything but the seed and how they are evaluated
    (the evaluation encoding, and the evaluation settings unless train.stop_when_fit reads them
    while training)."""
    key = dataclasses.replace(cfg, seed=0, eval_encoding=None)
    return key if cfg.train.stop_when_fit else dataclasses.replace(key, eval=EvalConfig())


def stack_models(trees: list[Any]) -> Any:
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


class Placement(NamedTuple):
    """Where packed state and sampled batches live on the local devices."""

    state: Any  # sharding of every leaf of the [S, ...] state and the [S] keys
    batch: Any  # sharding constraint of one model's batch inside the step, or None

    @classmethod
    def choose(cls, num_models: int, batch_size: int) -> Placement:
        """Spread seeds over devices when they divide evenly, else the batch, else replicate."""
        devices = jax.local_devices()
        n = len(devices)
        if n == 1:
            return cls(jax.sharding.SingleDeviceSharding(devices[0]), None)
        mesh = jax.sharding.Mesh(np.array(devices), ("data",))
        P = jax.sharding.PartitionSpec
        if num_models % n == 0:
            return cls(jax.sharding.NamedSharding(mesh, P("data")), None)
        replicated = jax.sharding.NamedSharding(mesh, P())
        if batch_size % n == 0:
            return cls(replicated, jax.sharding.NamedSharding(mesh, P("data")))
        return cls(replicated, None)


class Program(NamedTuple):
    """S packed models ready to train: their state, keys, and the compiled step."""

    graphdef: nnx.GraphDef
    state: TrainState  # every leaf has a leading axis of S models
    data_keys: jax.Array  # [S]
    pos_keys: jax.Array  # [S]
    step: Any  # compiled (state, data_keys, pos_keys) -> (state, metrics); state donated
    # Metrics are [S] per name, or [T, S] for T = train.steps_per_dispatch > 1 steps per call.
    compile_s: float


def _with_model_axis(step):
    """A one-model step on state and keys carrying a model axis of size 1."""

    def packed_step(state: TrainState, data_keys: jax.Array, pos_keys: jax.Array):
        state, metrics = step(jax.tree.map(lambda x: x[0], state), data_keys[0], pos_keys[0])
        return jax.tree.map(lambda x: x[None], (state, metrics))

    return packed_step


def _scan_steps(step, num_steps: int):
    """`num_steps` consecutive steps in one call (jax.lax.scan); metrics stacked [T, ...]."""

    def steps(state: TrainState, data_keys: jax.Array, pos_keys: jax.Array):
        return jax.lax.scan(lambda s, _: step(s, data_keys, pos_keys), state, length=num_steps)

    return steps


def build_program(cfg: RunConfig, seeds: list[int]) -> Program:
    """Initialise one model per seed, packed on a leading axis, and compile their joint step."""
    keys = stack_models([keys_from_seed(s) for s in seeds])
    graphdef = abstract_model(cfg.model, cfg.encoding, cfg.task.vocab_size)[0]
    tx = make_optimizer(cfg.train)

    def init(key: jax.Array) -> TrainState:
        params = init_model(cfg, key)[1]
        return TrainState(jnp.zeros((), jnp.int32), params, tx.init(params))

    place = Placement.choose(len(seeds), cfg.train.batch_size // cfg.train.length_buckets)
    state = jax.jit(jax.vmap(init), out_shardings=place.state)(keys.init)
    data_keys, pos_keys = (jax.device_put(k, place.state) for k in (keys.data, keys.positions))
    t0 = time.perf_counter()
    step = make_step(cfg, graphdef, place.batch)
    if len(seeds) == 1:  # one model: no vmap, which cost ~10% of CPU time on small models
        step = _with_model_axis(step)
    else:
        step = jax.vmap(step)
    if cfg.train.steps_per_dispatch > 1:
        step = _scan_steps(step, cfg.train.steps_per_dispatch)
    step = jax.jit(step, donate_argnums=0)
    step = step.lower(state, data_keys, pos_keys).compile()
    return Program(graphdef, state, data_keys, pos_keys, step, time.perf_counter() - t0)
