"""Training: the optimizer, the loss, the pure jitted step and the loop that writes a run directory.

The NNX model is split once into a static graph definition and a parameter pytree; the step is a
pure function (state, keys) -> (state, metrics) compiled once with `jax.jit`, its state donated.
Batches and positions are sampled on device inside the step from keys folded with the step
number, so the loop never builds data on the host. Metrics of step t are fetched after step t+1
has been dispatched, so the device does not wait on Python.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from tqdm.auto import tqdm

from pe_research import checkpoints, evaluate, results
from pe_research.config import RunConfig, TrainConfig
from pe_research.model import Transformer, abstract_model
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


class TrainingDiverged(FloatingPointError):
    pass


CHECKPOINT_EVERY = 100
"""Default steps between checkpoints (and one at the end of training)."""


def keys_from_seed(seed: int) -> Keys:
    return Keys(*jax.random.split(jax.random.key(seed), 3))


def make_optimizer(cfg: TrainConfig) -> optax.GradientTransformation:
    """AdamW with linear warmup, cosine decay to 10% and global-norm gradient clipping."""
    schedule = optax.warmup_cosine_decay_schedule(
        init_value=0.0,
        peak_value=cfg.learning_rate,
        warmup_steps=min(cfg.warmup_steps, cfg.steps - 1),
        decay_steps=cfg.steps,
        end_value=0.1 * cfg.learning_rate,
    )

    def decay_matrices(params: Any) -> Any:
        return jax.tree.map(lambda p: p.ndim >= 2, params)

    return optax.chain(
        optax.clip_by_global_norm(cfg.grad_clip),
        optax.adamw(schedule, weight_decay=cfg.weight_decay, mask=decay_matrices),
    )


def loss_and_metrics(logits_BLV: jax.Array, batch: Batch) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Mean cross entropy and token accuracy over the scored positions."""
    nll_BL = optax.softmax_cross_entropy_with_integer_labels(logits_BLV, batch.targets)
    mask_BL = batch.loss_mask.astype(jnp.float32)
    count = jnp.maximum(mask_BL.sum(), 1.0)
    loss = (nll_BL * mask_BL).sum() / count
    correct_BL = (jnp.argmax(logits_BLV, axis=-1) == batch.targets).astype(jnp.float32)
    return loss, {"loss": loss, "accuracy": (correct_BL * mask_BL).sum() / count}


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

    `batch_sharding`, if given, constrains the sampled batch (data parallelism over devices).
    """
    tx = make_optimizer(cfg.train)
    task, sampler, causal = cfg.task, cfg.positions, cfg.model.causal
    batch_size, length = cfg.train.batch_size, cfg.train.train_length

    def loss_fn(params: Any, batch: Batch, pos_BL: jax.Array):
        model = nnx.merge(graphdef, params)
        return loss_and_metrics(model(batch.inputs, pos_BL, batch.valid), batch)

    def step(state: TrainState, data_key: jax.Array, pos_key: jax.Array):
        batch = task.sample(
            jax.random.fold_in(data_key, state.step), batch_size, length, causal=causal
        )
        if batch_sharding is not None:
            batch = jax.lax.with_sharding_constraint(batch, batch_sharding)
        pos_BL = sampler.sample(
            jax.random.fold_in(pos_key, state.step), batch.valid, coords_BLA=batch.coords
        )
        grads, metrics = jax.grad(loss_fn, has_aux=True)(state.params, batch, pos_BL)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics["grad_norm"] = optax.tree.norm(grads)
        return TrainState(state.step + 1, params, opt_state), metrics

    return step


def make_train_step(cfg: RunConfig, graphdef: nnx.GraphDef):
    """The step of one model, jitted with its state donated."""
    return jax.jit(make_step(cfg, graphdef), donate_argnums=0)


def group_key(cfg: RunConfig) -> RunConfig:
    """What runs trained together share: everything but the seed and the evaluation encoding."""
    return dataclasses.replace(cfg, seed=0, eval_encoding=None)


def _stack(trees: list[Any]) -> Any:
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


class Placement(NamedTuple):
    """Where packed state and sampled batches live on the local devices."""

    state: Any  # sharding of every leaf of the [K, ...] state and the [K] keys
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
    """K packed models ready to train: their state, keys, and the compiled step."""

    graphdef: nnx.GraphDef
    state: TrainState  # every leaf has a leading axis of K models
    data_keys: jax.Array  # [K]
    pos_keys: jax.Array  # [K]
    step: Any  # compiled (state, data_keys, pos_keys) -> (state, metrics_K); state donated
    compile_s: float


def _with_model_axis(step):
    """A one-model step on state and keys carrying a model axis of size 1."""

    def packed_step(state: TrainState, data_keys: jax.Array, pos_keys: jax.Array):
        state, metrics = step(jax.tree.map(lambda x: x[0], state), data_keys[0], pos_keys[0])
        return jax.tree.map(lambda x: x[None], (state, metrics))

    return packed_step


def build_program(cfg: RunConfig, seeds: list[int]) -> Program:
    """Initialise one model per seed, packed on a leading axis, and compile their joint step."""
    keys = _stack([keys_from_seed(s) for s in seeds])
    graphdef = abstract_model(cfg.model, cfg.encoding, cfg.task.vocab_size)[0]
    tx = make_optimizer(cfg.train)

    def init(key: jax.Array) -> TrainState:
        params = init_model(cfg, key)[1]
        return TrainState(jnp.zeros((), jnp.int32), params, tx.init(params))

    place = Placement.choose(len(seeds), cfg.train.batch_size)
    state = jax.jit(jax.vmap(init), out_shardings=place.state)(keys.init)
    data_keys, pos_keys = (jax.device_put(k, place.state) for k in (keys.data, keys.positions))
    t0 = time.perf_counter()
    step = make_step(cfg, graphdef, place.batch)
    if len(seeds) == 1:  # one model: no vmap, which cost ~10% of CPU time on small models
        step = _with_model_axis(step)
    else:
        step = jax.vmap(step)
    step = jax.jit(step, donate_argnums=0)
    step = step.lower(state, data_keys, pos_keys).compile()
    return Program(graphdef, state, data_keys, pos_keys, step, time.perf_counter() - t0)


def train(
    cfg: RunConfig,
    run_dir: Path | str,
    *,
    overwrite: bool = False,
    progress: bool = True,
    checkpoint_every: int = CHECKPOINT_EVERY,
) -> tuple[nnx.GraphDef, Any]:
    """Train, evaluate and write a complete run directory; returns (graphdef, params).

    Writes config.json first, metrics.jsonl and checkpoints while training, eval.jsonl after,
    DONE last. An interrupted run in `run_dir` with the same config resumes from its newest
    checkpoint. TrainingDiverged if the loss becomes NaN or inf (the run is marked failed).
    """
    graphdef, params_K = train_group(
        [cfg],
        [run_dir],
        overwrite=overwrite,
        progress=progress,
        checkpoint_every=checkpoint_every,
    )
    return graphdef, jax.tree.map(lambda x: x[0], params_K)


def _resumable(run_dir: Path, cfg: RunConfig) -> bool:
    """Whether `run_dir` holds an unfinished run of `cfg` with at least one checkpoint."""
    if results.is_done(run_dir) or results.is_failed(run_dir) or not checkpoints.steps(run_dir):
        return False
    try:
        return results.load_config(run_dir) == cfg
    except (ValueError, FileNotFoundError):
        return False


def train_group(
    cfgs: list[RunConfig],
    run_dirs: list[Path | str],
    *,
    overwrite: bool = False,
    progress: bool = True,
    checkpoint_every: int = CHECKPOINT_EVERY,
) -> tuple[nnx.GraphDef, Any]:
    """Train runs that share a `group_key` as one program: one model per distinct seed, the
    seeds packed under jax.vmap; then evaluate each run (with its own eval_encoding, if any).

    Each seed's numbers equal training it alone (up to float reassociation), and runs that
    differ only in their evaluation encoding share one training. Each run directory gets its own
    config.json, metrics.jsonl, checkpoints/, eval.jsonl and DONE. If every run directory holds
    an unfinished run of its config with checkpoints, training resumes from the newest step
    that all of them checkpointed, and repeats the uninterrupted run bit for bit.

    A run whose loss becomes NaN or inf is marked failed (results.mark_failed, with the step)
    and gets no evaluation; the others train on. TrainingDiverged if every run failed. On
    several local devices the seeds (or else the batch) are spread over them. Returns
    (graphdef, params_K) for the distinct seeds in ascending order.
    """
    key = group_key(cfgs[0])
    if any(group_key(c) != key for c in cfgs[1:]):
        raise ValueError(
            "train_group packs runs that differ only in their seed (and evaluation encoding)."
        )
    for c in cfgs:
        c.check()
    if checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be >= 1 step, got {checkpoint_every}.")
    cfg = dataclasses.replace(cfgs[0], eval_encoding=None)
    seeds = sorted({c.seed for c in cfgs})
    resume = not overwrite and all(
        _resumable(Path(d), c) for c, d in zip(cfgs, run_dirs, strict=True)
    )
    run_dirs = [
        results.prepare(Path(d), c, overwrite=overwrite, resume=resume)
        for c, d in zip(cfgs, run_dirs, strict=True)
    ]
    K = len(seeds)
    shape = abstract_model(cfg.model, cfg.encoding, cfg.task.vocab_size)[0]
    for c in cfgs:  # an evaluation encoding that cannot take the parameters fails before training
        evaluate.eval_graphdef(c, shape)
    prog = build_program(cfg, seeds)
    graphdef, state, step_fn, compile_s = prog.graphdef, prog.state, prog.step, prog.compile_s
    data_keys, pos_keys = prog.data_keys, prog.pos_keys
    model_of = [seeds.index(c.seed) for c in cfgs]  # run -> its model in the pack
    run_keys = [
        {"data": data_keys[k], "positions": pos_keys[k]} for k in model_of
    ]  # what a checkpoint must hold: the data and position streams of the run's seed

    log_every, steps = cfg.train.log_every, cfg.train.steps
    start = 0
    if resume:
        like = jax.tree.map(lambda x: x[0], state)
        found = checkpoints.restore_latest(run_dirs, [like] * len(cfgs), run_keys)
        start = found[0] if found is not None else 0
        for d in run_dirs:  # unreadable or unshared later checkpoints are written again
            checkpoints.discard_after(d, start)
        if found is not None:
            states = found[1]
            where = ", ".join(str(d) for d in run_dirs)
            tqdm.write(f"Resuming {where} from the checkpoint of step {start} of {steps}.")
            per_model = [states[model_of.index(k)] for k in range(K)]
            state = jax.device_put(_stack(per_model), jax.tree.map(lambda x: x.sharding, state))
    width = cfg.task.seq_len(cfg.train.train_length, cfg.model.causal)
    tokens_per_step = K * cfg.train.batch_size * width
    last = {"step": start, "time": time.perf_counter()}
    t_start = last["time"]
    failed: dict[int, int] = {}  # run -> step its loss was first seen non-finite

    def write(files, step: int, metrics_K: dict) -> dict:
        """Fetch metrics of `step` (one step late) and append a row to each metrics.jsonl."""
        metrics_K = jax.device_get(metrics_K)
        now = time.perf_counter()
        tok_s = (step - last["step"]) * tokens_per_step / (now - last["time"])
        last.update(step=step, time=now)
        for r, (f, run_dir) in enumerate(zip(files, run_dirs, strict=True)):
            if r in failed:
                continue
            row = {"step": step, **{name: float(v[model_of[r]]) for name, v in metrics_K.items()}}
            # Throughput of the whole packed program, shared by its K runs.
            row.update(tokens_per_s=round(tok_s, 1), elapsed_s=round(now - t_start, 3))
            if K > 1:
                row["packed_runs"] = K
            if step <= log_every:
                row["compile_s"] = round(compile_s, 3)
            if not math.isfinite(row["loss"]):
                failed[r] = step
                results.mark_failed(
                    run_dir,
                    step=step,
                    reason=f"loss became {row['loss']} by step {step}; lower learning_rate "
                    f"(now {cfg.train.learning_rate}) or raise warmup_steps",
                )
            try:
                f.write(json.dumps(row) + "\n")
                f.flush()
            except OSError as e:  # a full disk says what to do, not just its errno
                raise results.write_error(run_dir / results.METRICS, e) from None
        if len(failed) == len(run_dirs):
            raise TrainingDiverged(
                f"loss became non-finite by step {step} in every run of "
                f"{', '.join(str(d) for d in run_dirs)}; lower learning_rate (now "
                f"{cfg.train.learning_rate}) or raise warmup_steps."
            )
        return row

    def save_checkpoints(step: int) -> None:
        for r, (mgr, keys) in enumerate(zip(managers, run_keys, strict=True)):
            if r not in failed:
                k = model_of[r]
                checkpoints.save(mgr, step, jax.tree.map(lambda x, k=k: x[k], state), keys)

    pending = None
    desc = f"{cfg.task.name}/{cfg.encoding.label()}" + (f" x{K} seeds" if K > 1 else "")
    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(_open_metrics(d / results.METRICS, start)) for d in run_dirs]
        managers = [checkpoints.manager(d) for d in run_dirs]
        for mgr in managers:
            stack.callback(mgr.close)
            stack.callback(mgr.wait_until_finished)
        bar = stack.enter_context(
            tqdm(total=steps, initial=start, desc=desc, disable=not progress, leave=False)
        )
        for i in range(start, steps):
            state, metrics = step_fn(state, data_keys, pos_keys)
            if pending is not None:
                row = write(files, *pending)
                bar.set_postfix(
                    loss=f"{row['loss']:.3f}",
                    acc=f"{row['accuracy']:.3f}",
                    tok_s=f"{row['tokens_per_s']:.0f}",
                )
                pending = None
            if (i + 1) % log_every == 0 or i + 1 == steps:
                pending = (i + 1, metrics)
            if (i + 1) % checkpoint_every == 0 or i + 1 == steps:
                if pending is not None:  # rows up to a checkpoint are on disk before it
                    write(files, *pending)
                    pending = None
                save_checkpoints(i + 1)
            bar.update(1)
        if pending is not None:
            write(files, *pending)

    # One evaluation of all seeds per evaluation encoding.
    for eval_encoding in dict.fromkeys(c.eval_encoding for c in cfgs):
        eval_cfg = dataclasses.replace(cfg, eval_encoding=eval_encoding)
        rows_K = evaluate.evaluate_packed(eval_cfg, graphdef, state.params, progress=progress)
        for r, (c, run_dir) in enumerate(zip(cfgs, run_dirs, strict=True)):
            if c.eval_encoding == eval_encoding and r not in failed:
                results.write_jsonl(run_dir / results.EVAL, rows_K[model_of[r]])
                results.mark_done(run_dir)
    return graphdef, state.params


def _open_metrics(path: Path, start: int):
    """metrics.jsonl for appending rows after step `start`: rows of later steps (logged after
    the checkpoint a run resumes from) are dropped first, so the file reads as one run."""
    if start == 0:
        return open(path, "w")
    rows = [r for r in results.read_jsonl(path) if r["step"] <= start] if path.exists() else []
    results.write_jsonl(path, rows)
    return open(path, "a")
