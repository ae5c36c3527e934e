"""Training: the optimizer, the loss, the pure jitted step and the loop that writes a run directory.

The NNX model is split once into a static graph definition and a parameter pytree; the step is a
pure function (state, keys) -> (state, metrics) compiled once with `jax.jit`, its state donated.
Batches and positions are sampled on device inside the step from keys folded with the step
number, so the loop never builds data on the host. Metrics of step t are fetched after step t+1
has been dispatched, so the device does not wait on Python.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from tqdm.auto import tqdm

from pe_research import evaluate, results
from pe_research.config import RunConfig, TrainConfig
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


class TrainingDiverged(FloatingPointError):
    pass


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


def make_train_step(cfg: RunConfig, graphdef: nnx.GraphDef):
    """The pure step (state, data_key, pos_key) -> (state, metrics), jitted with state donated."""
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
        pos_BL = sampler.sample(jax.random.fold_in(pos_key, state.step), batch.valid)
        grads, metrics = jax.grad(loss_fn, has_aux=True)(state.params, batch, pos_BL)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics["grad_norm"] = optax.tree.norm(grads)
        return TrainState(state.step + 1, params, opt_state), metrics

    return jax.jit(step, donate_argnums=0)


def train(
    cfg: RunConfig, run_dir: Path | str, *, overwrite: bool = False, progress: bool = True
) -> tuple[nnx.GraphDef, Any]:
    """Train, evaluate and write a complete run directory; returns (graphdef, params).

    Writes config.json first, metrics.jsonl while training, eval.jsonl after, DONE last.
    """
    cfg.check()
    run_dir = results.prepare(Path(run_dir), cfg, overwrite=overwrite)
    keys = keys_from_seed(cfg.seed)
    graphdef, state = init_state(cfg, keys)

    t0 = time.perf_counter()
    step_fn = make_train_step(cfg, graphdef).lower(state, keys.data, keys.positions).compile()
    compile_s = time.perf_counter() - t0
    width = cfg.task.seq_len(cfg.train.train_length, cfg.model.causal)
    tokens_per_step = cfg.train.batch_size * width
    log_every, steps = cfg.train.log_every, cfg.train.steps

    last = {"step": 0, "time": time.perf_counter()}
    t_start = last["time"]

    def write(f, step: int, metrics: dict) -> dict:
        """Fetch metrics of `step` (one step late) and append them to metrics.jsonl."""
        row = {"step": step, **{k: float(v) for k, v in jax.device_get(metrics).items()}}
        now = time.perf_counter()
        tok_s = (step - last["step"]) * tokens_per_step / (now - last["time"])
        last.update(step=step, time=now)
        row.update(tokens_per_s=round(tok_s, 1), elapsed_s=round(now - t_start, 3))
        if step <= log_every:
            row["compile_s"] = round(compile_s, 3)
        if not math.isfinite(row["loss"]):
            raise TrainingDiverged(
                f"loss became {row['loss']} by step {step} of {run_dir}; lower learning_rate "
                f"(now {cfg.train.learning_rate}) or raise warmup_steps."
            )
        f.write(json.dumps(row) + "\n")
        f.flush()
        return row

    pending = None
    desc = f"{cfg.task.name}/{cfg.encoding.label()}"
    with (
        open(run_dir / results.METRICS, "w") as f,
        tqdm(total=steps, desc=desc, disable=not progress, leave=False) as bar,
    ):
        for i in range(steps):
            state, metrics = step_fn(state, keys.data, keys.positions)
            if pending is not None:
                row = write(f, *pending)
                bar.set_postfix(
                    loss=f"{row['loss']:.3f}",
                    acc=f"{row['accuracy']:.3f}",
                    tok_s=f"{row['tokens_per_s']:.0f}",
                )
                pending = None
            if (i + 1) % log_every == 0 or i + 1 == steps:
                pending = (i + 1, metrics)
            bar.update(1)
        if pending is not None:
            write(f, *pending)

    rows = evaluate.evaluate(cfg, graphdef, state.params, progress=progress)
    results.write_jsonl(run_dir / results.EVAL, rows)
    results.mark_done(run_dir)
    return graphdef, state.params


def train_group(cfgs: list[RunConfig], run_dirs: list[Path], *, progress: bool = True) -> None:
    """Train several runs and write each one's run directory (same contract as `train`)."""
    for cfg, run_dir in zip(cfgs, run_dirs, strict=True):
        train(cfg, run_dir, progress=progress)
