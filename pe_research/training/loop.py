"""The training loop: train a group of packed runs, write their run directories, evaluate them.

Metrics of step t are fetched after step t+1 has been dispatched, so the device does not wait on
Python.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import time
from pathlib import Path
from typing import Any

import jax
from flax import nnx
from tqdm.auto import tqdm

from pe_research import runs
from pe_research.config import RunConfig
from pe_research.model import abstract_model
from pe_research.training import checkpoints, evaluate
from pe_research.training.program import build_program, group_key, stack_models


class TrainingDiverged(FloatingPointError):
    pass


CHECKPOINT_EVERY = 100
"""Default steps between checkpoints (and one at the end of training)."""


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
    if runs.is_done(run_dir) or runs.is_failed(run_dir) or not checkpoints.steps(run_dir):
        return False
    try:
        return runs.load_config(run_dir) == cfg
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

    A run whose loss becomes NaN or inf is marked failed (runs.mark_failed, with the step)
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
        evaluate.check_run(c)
    if checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be >= 1 step, got {checkpoint_every}.")
    cfg = dataclasses.replace(cfgs[0], eval_encoding=None)
    seeds = sorted({c.seed for c in cfgs})
    resume = not overwrite and all(
        _resumable(Path(d), c) for c, d in zip(cfgs, run_dirs, strict=True)
    )
    run_dirs = [
        runs.prepare(Path(d), c, overwrite=overwrite, resume=resume)
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
            state = jax.device_put(
                stack_models(per_model), jax.tree.map(lambda x: x.sharding, state)
            )
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
                runs.mark_failed(
                    run_dir,
                    step=step,
                    reason=f"loss became {row['loss']} by step {step}; lower learning_rate "
                    f"(now {cfg.train.learning_rate}) or raise warmup_steps",
                )
            try:
                f.write(json.dumps(row) + "\n")
                f.flush()
            except OSError as e:  # a full disk says what to do, not just its errno
                raise runs.write_error(run_dir / runs.METRICS, e) from None
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
        files = [stack.enter_context(_open_metrics(d / runs.METRICS, start)) for d in run_dirs]
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
                runs.write_jsonl(run_dir / runs.EVAL, rows_K[model_of[r]])
                runs.mark_done(run_dir)
    return graphdef, state.params


def _open_metrics(path: Path, start: int):
    """metrics.jsonl for appending rows after step `start`: rows of later steps (logged after
    the checkpoint a run resumes from) are dropped first, so the file reads as one run."""
    if start == 0:
        return open(path, "w")
    rows = [r for r in runs.read_jsonl(path) if r["step"] <= start] if path.exists() else []
    runs.write_jsonl(path, rows)
    return open(path, "a")
