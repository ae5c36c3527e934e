"""The training loop: train a group of packed runs, write their run directories, evaluate them.

Metrics of step t are fetched after step t+1 has been dispatched, so the device does not wait on
Python.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import jax
from flax import nnx
from tqdm.auto import tqdm

from pe_research import runs
from pe_research.config import RunConfig
from pe_research.model import abstract_model
from pe_research.runs.wandb_sink import LiveRuns, Project
from pe_research.training import checkpoints, evaluate, hyperparameters, selection
from pe_research.training.program import (
    Program,
    build_program,
    group_key,
    resolve_steps_per_dispatch,
    stack_models,
)
from pe_research.training.run_log import RunLog
from pe_research.training.step import TrainState, padded_tokens

CHECKPOINT_EVERY = 100
"""Default steps between checkpoints (and one at the end of training)."""


def train(
    cfg: RunConfig,
    run_dir: Path | str,
    *,
    overwrite: bool = False,
    progress: bool = True,
    checkpoint_every: int = CHECKPOINT_EVERY,
    wandb: Project | str | None = None,
) -> tuple[nnx.GraphDef, Any]:
    """Train, evaluate and write a complete run directory; returns (graphdef, params).

    Writes config.json first, metrics.jsonl and checkpoints while training, eval.jsonl after,
    DONE last. An interrupted run in `run_dir` with the same config resumes from its newest
    checkpoint. TrainingDiverged if the loss becomes NaN or inf (the run is marked failed).
    `wandb`: a Weights & Biases project that gets every row too (runs.wandb_sink).
    """
    graphdef, params_S = train_group(
        [cfg],
        [run_dir],
        overwrite=overwrite,
        progress=progress,
        checkpoint_every=checkpoint_every,
        wandb=wandb,
    )
    return graphdef, jax.tree.map(lambda x: x[0], params_S)


def _resumable(run_dir: Path, cfg: RunConfig) -> bool:
    """Whether `run_dir` holds an unfinished run of `cfg` with at least one checkpoint."""
    if runs.is_finished(run_dir) or not checkpoints.steps(run_dir):
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
    wandb: Project | str | None = None,
) -> tuple[nnx.GraphDef, Any]:
    """Train runs that share a `group_key` as one program: one model per distinct seed and
    packable numbers (learning rate, RoPE base, ...: training.hyperparameters), packed under
    jax.vmap; then evaluate each run (with its own eval_encoding and eval settings).

    Each model's numbers equal training it alone (up to float reassociation), and runs that
    differ only in how they are evaluated (`group_key`) share one training. Each run directory
    gets its own config.json, metrics.jsonl, checkpoints/, eval.jsonl and DONE. If every run
    directory holds an unfinished run of its config with checkpoints, training resumes from the
    newest step that all of them checkpointed, and repeats the uninterrupted run bit for bit.

    A run whose loss becomes NaN or inf is marked failed (runs.mark_failed, with the step)
    and gets no evaluation; the others train on. TrainingDiverged if every run failed. On
    several local devices the models (or else the batch) are spread over them. Returns
    (graphdef, params_S) for the distinct models, in ascending order of seed, then numbers.
    With `wandb` (a Weights & Biases project), each run is also a live W&B run that gets every
    row its files get (runs.wandb_sink.LiveRuns).
    """
    cfg, models = _check_group(cfgs, checkpoint_every)
    cfg = resolve_steps_per_dispatch(cfg, checkpoint_every)
    resume = not overwrite and all(
        _resumable(Path(d), c) for c, d in zip(cfgs, run_dirs, strict=True)
    )
    run_dirs = [
        runs.prepare(Path(d), c, overwrite=overwrite, resume=resume)
        for c, d in zip(cfgs, run_dirs, strict=True)
    ]
    ids = [_model_id(c) for c in models]
    prog = build_program(cfg, [c.seed for c in models], [hyperparameters.values(c) for c in models])
    model_of = [ids.index(_model_id(c)) for c in cfgs]  # run -> its model in the pack
    # What a checkpoint must hold: the data and position streams of the run's seed.
    keys = [{"data": prog.data_keys[s], "positions": prog.pos_keys[s]} for s in model_of]
    # With train.select_best, the best parameters so far travel with the state (checkpoints too).
    best = selection.initial(prog.state.params) if cfg.train.select_best else None
    start, state, best = _resume(run_dirs, prog, model_of, keys, best) if resume else (
        0, prog.state, best
    )  # fmt: skip
    log = RunLog(
        run_dirs,
        model_of,
        start=start,
        tokens_per_step=len(models) * padded_tokens(cfg),
        compile_s=prog.compile_s,
        log_every=cfg.train.log_every,
        learning_rate=[c.train.learning_rate for c in cfgs],
        fit_threshold=cfg.train.fit_threshold if cfg.train.stop_when_fit else None,
        stop_threshold=cfg.train.stop_threshold,
        select=best is not None,
        sink=None if wandb is None else LiveRuns(wandb, run_dirs, cfgs),
    )
    ckpt = checkpoints.Checkpointer(
        run_dirs, model_of, keys, every=checkpoint_every, last=cfg.train.steps
    )
    fit_check = None
    if cfg.train.stop_when_fit:
        fit_check = evaluate.make_fit_check(cfg, prog.graphdef, prog.values)
    select = None
    if best is not None:
        check = evaluate.make_select_check(cfg, prog.graphdef, prog.values)
        select = selection.Selection(cfg, check, best)
    with log:
        with ckpt:
            state = _loop(cfg, prog, state, start, log, ckpt, progress, fit_check, select)
        params = state.params if select is None else select.best["params"]
        chosen = None if select is None else jax.device_get(select.best["step"])
        _evaluate_and_finish(cfgs, run_dirs, prog, params, model_of, log, progress, chosen)
    return prog.graphdef, params


def compile_group(cfgs: list[RunConfig], checkpoint_every: int = CHECKPOINT_EVERY) -> None:
    """Compile the training step that `train_group` will run for these runs (it waits for, or
    reuses, this program): for a sweep to compile its next groups while one trains."""
    cfg, models = _check_group(cfgs, checkpoint_every)
    cfg = resolve_steps_per_dispatch(cfg, checkpoint_every)
    build_program(cfg, [c.seed for c in models], [hyperparameters.values(c) for c in models])


def _model_id(cfg: RunConfig) -> tuple[int, str]:
    """What makes a run's model in a pack: its seed and its packable numbers."""
    return cfg.seed, json.dumps(hyperparameters.values(cfg), sort_keys=True)


def _check_group(cfgs: list[RunConfig], checkpoint_every: int) -> tuple[RunConfig, list[RunConfig]]:
    """The group's training config and one config per distinct model (seed and packable
    numbers), in order of seed and numbers; ValueError before any training if a config, an
    evaluation encoding or the checkpoint interval cannot work."""
    key = group_key(cfgs[0])
    for c in cfgs[1:]:
        if apart := hyperparameters.differences(group_key(c), key):
            raise ValueError(
                "train_group packs runs that differ only in their seed, packable numbers "
                f"(training.hyperparameters) and evaluation; these differ in {', '.join(apart)}: "
                "train them apart (the sweep groups them with train.group_key)."
            )
    for c in cfgs:
        evaluate.check_run(c)
    if checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be >= 1 step, got {checkpoint_every}.")
    per_call = cfgs[0].train.steps_per_dispatch
    if per_call and checkpoint_every % per_call:
        raise ValueError(
            f"the checkpoint interval ({checkpoint_every} steps) is not a multiple of "
            f"steps_per_dispatch={per_call}: checkpoints are saved between dispatches; set "
            "--checkpoint-every to a multiple of it, or lower --train.steps-per-dispatch."
        )
    cfg = dataclasses.replace(cfgs[0], eval_encoding=None)
    shape = abstract_model(cfg.model, cfg.encoding, cfg.task.vocab_size)[0]
    for c in cfgs:  # an evaluation encoding that cannot take the parameters fails before training
        evaluate.eval_graphdef(c, shape)
    models = {_model_id(c): dataclasses.replace(c, eval_encoding=None) for c in cfgs}
    return cfg, [models[i] for i in sorted(models)]


def _resume(
    run_dirs: list[Path],
    prog: Program,
    model_of: list[int],
    keys: list[dict[str, jax.Array]],
    best: dict[str, Any] | None,
) -> tuple[int, TrainState, dict[str, Any] | None]:
    """The newest step that every run checkpointed and reads back, with the packed state (and
    the best parameters of train.select_best) at it, else step 0 and the fresh ones. Later
    checkpoints are discarded: they are written again."""
    carried = prog.state if best is None else (prog.state, best)
    like = jax.tree.map(lambda x: x[0], carried)
    found = checkpoints.restore_latest(run_dirs, [like] * len(run_dirs), keys)
    start = 0 if found is None else found[0]
    for d in run_dirs:
        checkpoints.discard_after(d, start)
    if found is None:
        return 0, prog.state, best
    where = ", ".join(str(d) for d in run_dirs)
    tqdm.write(f"Resuming {where} from the checkpoint of step {start}.")
    per_model = [found[1][model_of.index(s)] for s in range(len(set(model_of)))]
    shardings = jax.tree.map(lambda x: x.sharding, carried)
    restored = jax.device_put(stack_models(per_model), shardings)
    return (start, restored, None) if best is None else (start, *restored)


def _loop(
    cfg: RunConfig,
    prog: Program,
    state: TrainState,
    start: int,
    log: RunLog,
    ckpt: checkpoints.Checkpointer,
    progress: bool,
    fit_check: Any = None,
    select: selection.Selection | None = None,
) -> TrainState:
    """Steps start+1..steps, `steps_per_dispatch` per call. The metrics of a logged step are
    fetched after the next call has been dispatched, and every row up to a checkpoint is on
    disk before it is saved.

    With `fit_check` (train.stop_when_fit), every fit_check_every steps the check's row goes to
    the fit.jsonl of each run still training; a run found fit gets that step logged and
    checkpointed and its model frozen (`RunLog.active_models`: the step keeps its parameters and
    optimizer state), so it ends as it would have alone, and once every live run is fit the loop
    stops. A run resumed from a checkpoint reads its fits back from fit.jsonl.

    With `select` (train.select_best), every select_every steps and at the last the validation
    check's row goes to select.jsonl and each model's best parameters are kept; checkpoints save
    them beside the state.
    """
    steps, log_every, per_call = cfg.train.steps, cfg.train.log_every, cfg.train.steps_per_dispatch
    check_every = cfg.train.fit_check_every
    if fit_check is not None and log.all_fit():  # resumed from the checkpoint of the stop
        return state
    active_S = prog.placed(log.active_models())
    seeds = log.num_models
    desc = f"{cfg.task.name}/{cfg.encoding.label()}" + (f" x{seeds} seeds" if seeds > 1 else "")
    pending = None
    with tqdm(total=steps, initial=start, desc=desc, disable=not progress, leave=False) as bar:
        for step in range(start + per_call, steps + 1, per_call):
            state, metrics = prog.run(state, active_S)
            runs.beat(log.run_dirs)  # the sweep's claims on these runs live on
            if pending is not None:
                row = log.write(*pending)
                if row:
                    bar.set_postfix(
                        loss=f"{row['loss']:.3f}",
                        acc=f"{row['token_accuracy']:.3f}",
                        tok_s=f"{row['tokens_per_s']:.0f}",
                    )
                pending = None
            fit = newly_fit = False
            if fit_check is not None and step % check_every == 0:
                jax.block_until_ready(state.params)  # time the check, not the queued steps
                t0 = time.perf_counter()
                exact_match_S = fit_check(state.params)
                fit = log.write_fit(step, exact_match_S, time.perf_counter() - t0)
                newly_fit = step in log.fit_at.values()
                if newly_fit:
                    active_S = prog.placed(log.active_models())
                bar.set_postfix(fit_exact_match=f"{float(exact_match_S.min()):.3f}")
            if step % log_every == 0 or step == steps or newly_fit:
                # Only logged calls pay for it: the row is of the last step of the call.
                pending = (
                    step,
                    metrics if per_call == 1 else jax.tree.map(lambda m: m[-1], metrics),
                )
            if select is not None and select.due(step):
                log.write_select(step, *select.update(step, state.params))
            if ckpt.due(step) or newly_fit:
                if pending is not None:  # rows up to a checkpoint are on disk before it
                    log.write(*pending)
                    pending = None
                ckpt.save(step, state if select is None else (state, select.best), log.live())
            bar.update(per_call)
            if fit:
                break
        if pending is not None:
            log.write(*pending)
    return state


def _evaluate_and_finish(
    cfgs: list[RunConfig],
    run_dirs: list[Path],
    prog: Program,
    params_S: Any,
    model_of: list[int],
    log: RunLog,
    progress: bool,
    chosen_S: Any = None,
) -> None:
    """One evaluation of all models per way of evaluating (evaluation encoding and settings),
    each model with its own packable numbers; each run that did not fail gets its eval.jsonl
    (and eval events), then DONE. `chosen_S`: the step each model's parameters are of
    (train.select_best), written into its rows as `selected_step`."""
    for how in dict.fromkeys((c.eval_encoding, c.eval) for c in cfgs):
        eval_cfg = dataclasses.replace(cfgs[0], eval_encoding=how[0], eval=how[1])
        rows_S = evaluate.evaluate_packed(
            eval_cfg, prog.graphdef, params_S, progress=progress, values_S=prog.values,
            each_length=lambda: runs.beat(run_dirs),
        )  # fmt: skip
        for r in log.live():
            if (cfgs[r].eval_encoding, cfgs[r].eval) == how:
                rows = rows_S[model_of[r]]
                if chosen_S is not None:
                    rows = [{**row, "selected_step": int(chosen_S[model_of[r]])} for row in rows]
                log.write_eval(r, rows)
                runs.mark_done(run_dirs[r])
