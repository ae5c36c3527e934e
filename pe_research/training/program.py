"""S packed models as one compiled program: runs that differ only in their seed and packable
numbers (training.hyperparameters) train together, their state stacked on a leading model axis
and their step under jax.vmap, spread over the local devices. The batches are drawn by a
separately compiled sampler, so the step never sees the task, and runs whose batches have the
same shapes share one compiled step (`program_key`)."""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import math
import threading
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from pe_research.config import EvalConfig, RunConfig
from pe_research.model import abstract_model
from pe_research.positions import Contiguous
from pe_research.training import hyperparameters
from pe_research.training.step import (
    TrainState,
    init_model,
    keys_from_seed,
    make_batch_step,
    make_optimizer,
    make_sampler,
)


def group_key(cfg: RunConfig) -> RunConfig:
    """What runs trained together share: everything but the seed, the packable numbers
    (`hyperparameters`: learning rate, weight decay, clipping, an encoding's value
    hyper-parameters such as RoPE's base) and how they are evaluated (the evaluation encoding,
    and the evaluation settings unless train.stop_when_fit reads them while training)."""
    key = dataclasses.replace(hyperparameters.placeholder(cfg), seed=0, eval_encoding=None)
    return key if cfg.train.stop_when_fit else dataclasses.replace(key, eval=EvalConfig())


MAX_STEPS_PER_DISPATCH = 100
"""The most steps one call runs when train.steps_per_dispatch is 0 (chosen per backend)."""


def resolve_steps_per_dispatch(cfg: RunConfig, checkpoint_every: int) -> RunConfig:
    """`cfg` with train.steps_per_dispatch 0 made concrete: 1 on CPU (no gain there: 23.6 vs
    23.5 ms per step), else the largest divisor of steps, log_every, the checkpoint interval
    and (training until fit) fit_check_every, up to MAX_STEPS_PER_DISPATCH, so that logging,
    fit checks and checkpoints fall between calls and no step waits on the host."""
    train = cfg.train
    if train.steps_per_dispatch:
        return cfg
    intervals = [train.steps, train.log_every, checkpoint_every]
    intervals += [train.fit_check_every] if train.stop_when_fit else []
    g = math.gcd(*intervals)
    T = max(d for d in range(1, min(g, MAX_STEPS_PER_DISPATCH) + 1) if g % d == 0)
    if jax.default_backend() == "cpu":
        T = 1
    return dataclasses.replace(cfg, train=dataclasses.replace(train, steps_per_dispatch=T))


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
    """S packed models ready to train: their state, keys, the sampler and the compiled step."""

    graphdef: nnx.GraphDef
    state: TrainState  # every leaf has a leading axis of S models
    data_keys: jax.Array  # [S]
    pos_keys: jax.Array  # [S]
    step: Any  # compiled (state, groups, values) -> (state, metrics); state donated
    # Metrics are [S] per name, or [T, S] for T = train.steps_per_dispatch > 1 steps per call.
    sample: Any  # compiled (data_keys, pos_keys, step_S) -> the groups of one call of `step`
    values: Any  # each model's packable numbers (hyperparameters.Values of [S] arrays)
    compile_s: float  # compiling the step and the sampler; 0 for a step compiled before
    all_active: jax.Array  # [S] True: every model trains

    def placed(self, active_S: Any) -> jax.Array:
        """[S] bools on the devices of the packed state (an argument of `run`)."""
        return jax.device_put(jnp.asarray(active_S, bool), self.all_active.sharding)

    def run(self, state: TrainState, active_S: jax.Array | None = None) -> tuple[TrainState, Any]:
        """One call: sample the batches of the next steps on device, then train on them. Models
        whose `active_S` is False keep their parameters and optimizer state (their step count
        and metrics go on); default: all train."""
        groups = self.sample(self.data_keys, self.pos_keys, state.step)
        active_S = self.all_active if active_S is None else active_S
        return self.step(state, groups, self.values, active_S)


def program_key(cfg: RunConfig) -> RunConfig:
    """What a compiled training step computes with, besides the shapes of its inputs: the
    config less the task and the position sampler (they only draw the batch, outside the step),
    the seed and the evaluation. Runs with equal keys and equally shaped batches (copy and
    reverse of the same lengths) share one compiled step."""
    return dataclasses.replace(
        group_key(cfg), task=None, positions=Contiguous(), eval=EvalConfig(), eval_encoding=None
    )


def _with_model_axis(fn):
    """A one-model function on arguments and results carrying a model axis of size 1."""

    def packed(*args):
        return jax.tree.map(lambda x: x[None], fn(*jax.tree.map(lambda x: x[0], args)))

    return packed


def _shapes(tree: Any) -> Any:
    """A hashable description of the shapes, dtypes and placements of a pytree of arrays."""
    leaves, treedef = jax.tree.flatten(tree)
    return treedef, tuple((x.shape, str(x.dtype), x.sharding) for x in leaves)


# (program_key, models, batch sharding, input shapes) -> the compiled step (a Future, so that a
# program compiled ahead in a background thread is waited for, never compiled twice), the most
# recent few: runs that share all of it train with one compiled program in this process (and,
# through the persistent compilation cache, across processes).
_STEPS: collections.OrderedDict[Any, concurrent.futures.Future] = collections.OrderedDict()
_STEPS_LOCK = threading.Lock()
KEEP_STEPS = 8


def _frozen_unless_active(step):
    """The one-model step with a flag `active`: when False the model keeps its parameters and
    optimizer state (a packed seed that is fit trains no further, as it would stop alone)."""

    def masked(state: TrainState, groups: Any, values: Any, active: jax.Array):
        new, metrics = step(state, groups, values)

        def keep(x: Any, old: Any) -> Any:
            return jax.tree.map(lambda n, o: jnp.where(active, n, o), x, old)

        return new._replace(
            params=keep(new.params, state.params), opt_state=keep(new.opt_state, state.opt_state)
        ), metrics

    return masked


def _compiled_step(
    cfg: RunConfig, graphdef: nnx.GraphDef, num_models: int, place, state, groups, values, active
):
    key = (program_key(cfg), num_models, place.batch, _shapes((state, groups, values, active)))
    with _STEPS_LOCK:
        entry = _STEPS.get(key)
        mine = entry is None
        if mine:
            entry = _STEPS[key] = concurrent.futures.Future()
            while len(_STEPS) > KEEP_STEPS:
                _STEPS.popitem(last=False)
        _STEPS.move_to_end(key)
    if not mine:
        return entry.result()
    try:
        # Built from the key, not from cfg: the step cannot read the task, the seed or a
        # packable number (those come in `values`).
        step = _frozen_unless_active(make_batch_step(key[0], graphdef, place.batch))
        step = _with_model_axis(step) if num_models == 1 else jax.vmap(step)
        if cfg.train.steps_per_dispatch > 1:  # groups carry a leading axis of steps
            one_step = step

            def step(state: TrainState, groups_T: Any, values: Any, active: Any):
                return jax.lax.scan(lambda s, g: one_step(s, g, values, active), state, groups_T)

        lowered = jax.jit(step, donate_argnums=0).lower(state, groups, values, active)
        entry.set_result(lowered.compile())
    except BaseException as e:
        entry.set_exception(e)
        with _STEPS_LOCK:
            _STEPS.pop(key, None)
        raise
    return entry.result()


def _compiled_sampler(cfg: RunConfig, num_models: int, data_keys, pos_keys, steps_S):
    """(data_keys, pos_keys, step_S) -> the groups of the next train.steps_per_dispatch steps
    of each model ([S, ...], or [T, S, ...] for T > 1 steps per call)."""
    sample = make_sampler(cfg)
    sample = _with_model_axis(sample) if num_models == 1 else jax.vmap(sample)
    T = cfg.train.steps_per_dispatch
    if T > 1:
        one_call = sample

        def sample(data_keys, pos_keys, step_S):
            return jax.vmap(lambda t: one_call(data_keys, pos_keys, step_S + t))(jnp.arange(T))

    return jax.jit(sample).lower(data_keys, pos_keys, steps_S).compile()


def build_program(
    cfg: RunConfig, seeds: list[int], values: list[hyperparameters.Values] | None = None
) -> Program:
    """Initialise one model per seed, packed on a leading axis, and compile their joint step
    (or reuse the step compiled for an earlier run with the same `program_key` and shapes).
    `values`: each model's packable numbers (default: those of `cfg` for every model)."""
    keys = stack_models([keys_from_seed(s) for s in seeds])
    shared = hyperparameters.placeholder(cfg)
    graphdef = abstract_model(shared.model, shared.encoding, shared.task.vocab_size)[0]
    tx = make_optimizer(cfg.train)

    def init(key: jax.Array) -> TrainState:
        params = init_model(shared, key)[1]
        return TrainState(jnp.zeros((), jnp.int32), params, tx.init(params))

    S = len(seeds)
    values = values or [hyperparameters.values(dataclasses.replace(cfg, seed=s)) for s in seeds]
    place = Placement.choose(S, cfg.train.batch_size // cfg.train.length_buckets)
    state = jax.jit(jax.vmap(init), out_shardings=place.state)(keys.init)
    data_keys, pos_keys = (jax.device_put(k, place.state) for k in (keys.data, keys.positions))
    values_S = jax.device_put(hyperparameters.stack(values), place.state)
    all_active = jax.device_put(jnp.ones(S, bool), place.state)
    t0 = time.perf_counter()
    sample = _compiled_sampler(cfg, S, data_keys, pos_keys, state.step)
    step = _compiled_step(cfg, graphdef, S, place, state, sample.out_info, values_S, all_active)
    compile_s = time.perf_counter() - t0
    return Program(
        graphdef, state, data_keys, pos_keys, step, sample, values_S, compile_s, all_active
    )
