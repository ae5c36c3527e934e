"""Run an experiment: a module whose `runs()` returns a list of RunConfigs.

Each run gets a directory named by its id (runs.run_id); a run whose rows are in the sweep's
results table, or whose directory is finished (DONE), is skipped, so rerunning the same command
after an interruption, or on another machine with the committed table, completes the sweep. A
run killed half-way resumes from its checkpoints. A run whose loss diverged is marked FAILED and
counts as finished (shown as failed, retried only with `retry_failed`). Runs that differ only in
their seed (or packable numbers) are trained together (`train.train_group`).

Several processes can share one output folder: each run is claimed (runs.try_claim) before
training, and a run claimed by a live process is left to it. Several hosts split the grid into
shards (`--shard I/N`, or one shard per JAX process). The sweep writes the results table of the
finished runs (results.py), and its page once every run is in it (pages.py).
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
import types
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
from tqdm.auto import tqdm

from pe_research import metrics, results, runs, train
from pe_research.config import RunConfig
from pe_research.runs import wandb_sink
from pe_research.sweeps import cost, experiments, grouping, pages, summary
from pe_research.sweeps import workers as workers_lib
from pe_research.sweeps.grouping import group_by_seed, shard_of, split_reasons
from pe_research.training import evaluate


def run_dir_for(root: Path, cfg: RunConfig) -> Path:
    """root/<task>/<encoding>/seed<N>-<hash> (runs.run_id)."""
    return Path(root) / runs.run_id(cfg)


def parse_shard(
    spec: str, count: int | None = None, env: Mapping[str, str] | None = None
) -> tuple[int, int]:
    """ "I/N" (this process takes shard I, counted from 0, of N) as (I, N); "auto" reads the index
    a scheduler gives (`scheduler_shard`), `count` overriding the number of shards."""
    if spec.strip() == "auto":
        return scheduler_shard(count, os.environ if env is None else env)
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", spec)
    if not m or not int(m[1]) < int(m[2]):
        raise ValueError(
            f"--shard {spec!r} is not I/N with 0 <= I < N: write e.g. --shard 0/4 on the first "
            "of four hosts and --shard 3/4 on the last, or --shard auto under a scheduler."
        )
    return int(m[1]), int(m[2])


def scheduler_shard(count: int | None, env: Mapping[str, str]) -> tuple[int, int]:
    """(index, count) of this process from what its scheduler sets: a SLURM job array
    (SLURM_ARRAY_TASK_ID, _MIN, _STEP and _COUNT), a Kubernetes Indexed Job (JOB_COMPLETION_INDEX,
    with the count from `count` or JOB_COMPLETIONS), or a multi-process JAX job (its process index
    and count, e.g. the hosts of a TPU pod)."""
    if "SLURM_ARRAY_TASK_ID" in env:
        step = int(env.get("SLURM_ARRAY_TASK_STEP", 1))
        index = (int(env["SLURM_ARRAY_TASK_ID"]) - int(env.get("SLURM_ARRAY_TASK_MIN", 0))) // step
        total = count or int(env.get("SLURM_ARRAY_TASK_COUNT", 0))
        where = "SLURM_ARRAY_TASK_ID"
    elif "JOB_COMPLETION_INDEX" in env:
        index, total = int(env["JOB_COMPLETION_INDEX"]), count or int(env.get("JOB_COMPLETIONS", 0))
        if not total:
            raise ValueError(
                "--shard auto: JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but not the "
                "job's size: pass --shard-count N (the job's completions), or set JOB_COMPLETIONS "
                "in the pod's environment."
            )
        where = "JOB_COMPLETION_INDEX"
    elif jax.process_count() > 1:
        return jax.process_index(), count or jax.process_count()
    else:
        raise ValueError(
            "--shard auto found no scheduler's index: SLURM_ARRAY_TASK_ID (a SLURM job array), "
            "JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) are unset, and this is not a "
            "multi-process JAX job (--coordinator). Start it under one of them, or give --shard "
            "I/N."
        )
    if not 0 <= index < total:
        raise ValueError(
            f"--shard auto: {where} gives index {index}, outside the {total} shards; give "
            "--shard-count N with the job's size."
        )
    return index, total


def init_distributed(
    coordinator: str | None, num_processes: int | None, process_id: int | None
) -> None:
    """Join a multi-process JAX job (coordinator HOST:PORT, or JAX_COORDINATOR_ADDRESS; "auto"
    lets JAX find the job from its environment: a TPU pod, SLURM, Kubernetes); without either,
    a no-op. Call it before any JAX computation."""
    coordinator = coordinator or os.environ.get("JAX_COORDINATOR_ADDRESS")
    if coordinator is None:
        if num_processes is not None or process_id is not None:
            raise ValueError("--num-processes and --process-id need --coordinator HOST:PORT.")
        return
    if num_processes is not None and process_id is not None and not 0 <= process_id < num_processes:
        raise ValueError(
            f"--process-id {process_id} is not in 0..{num_processes - 1} (--num-processes "
            f"{num_processes}): number the processes 0, 1, ..., N-1."
        )
    jax.config.update("jax_cpu_collectives_implementation", "gloo")  # multi-process on CPU
    # Processes of a sweep train different runs and never meet in a collective: the preemption
    # service would only catch their SIGTERM (workers.exit_on_sigterm handles it).
    jax.config.update("jax_enable_preemption_service", False)
    if coordinator == "auto":
        jax.distributed.initialize()
    else:
        jax.distributed.initialize(coordinator, num_processes, process_id)


@dataclasses.dataclass
class SweepResult:
    """What one process's sweep found and did."""

    dirs: list[Path]
    """Every run of the experiment, in config order."""
    trained: list[Path]
    """Runs this process trained to the end (DONE)."""
    claimed_by_others: dict[Path, str]
    """Runs left unfinished to the live processes that claimed them -> who."""
    held_by_workers: dict[Path, str] = dataclasses.field(default_factory=dict)
    """Runs left unfinished to the `--workers` processes of this command that claimed them ->
    which worker: the command waits for them, so their LOCKs are live."""
    failed: list[Path] = dataclasses.field(default_factory=list)
    """Runs this process trained that failed (their loss diverged: runs.mark_failed)."""
    unfinished: list[Path] = dataclasses.field(default_factory=list)
    """Runs this process started whose group stopped (TrainingDiverged) before they finished or
    were marked failed: the next run of the sweep trains them again."""
    failed_workers: list[str] = dataclasses.field(default_factory=list)
    """Worker processes of this command (`--workers`) that exited with an error, by log file."""
    abandoned: list[Path] = dataclasses.field(default_factory=list)
    """Runs left unfinished, and claimed by no live process, after a worker of this command
    failed: the command did not do its job (`pe-research sweep` exits with status 1)."""
    recorded: set[Path] = dataclasses.field(default_factory=set)
    """Runs whose rows are in the sweep's results table: finished, wherever they trained."""
    taken_from_other_shards: list[Path] = dataclasses.field(default_factory=list)
    """Runs of other shards, unclaimed, that this process trained once its own were done."""

    @property
    def ids(self) -> list[str]:
        """The run ids of `dirs` (runs.run_id: the last three parts of a run's directory)."""
        return ["/".join(d.parts[-3:]) for d in self.dirs]

    def is_finished(self, run_dir: Path) -> bool:
        return run_dir in self.recorded or runs.is_finished(run_dir)

    @property
    def finished(self) -> list[Path]:
        """Runs that are done or failed, here or in the results table: none is trained again."""
        return [d for d in self.dirs if self.is_finished(d)]

    @property
    def failed_runs(self) -> list[Path]:
        """Every failed run of the experiment in the run folder (this process's and earlier)."""
        return [d for d in self.dirs if runs.is_failed(d) and not runs.is_done(d)]

    @property
    def complete(self) -> bool:
        return all(self.is_finished(d) for d in self.dirs)


def run_sweep(
    configs: list[RunConfig],
    root: Path,
    *,
    shard: tuple[int, int] = (0, 1),
    progress: bool = True,
    retry_failed: bool = False,
    checkpoint_every: int = train.CHECKPOINT_EVERY,
    workers: Mapping[int, str] | None = None,
    recorded: Collection[str] = (),
    lease_s: float = runs.LEASE_S,
    wandb: wandb_sink.Project | str | None = None,
) -> SweepResult:
    """Train every run of this shard that is neither finished, nor in `recorded` (run ids of
    the results table), nor claimed by a live process; then the runs of other shards that no
    process holds. `workers` names, by PID, the processes on this host that this command started
    to share the sweep, so that the runs they hold are reported as theirs. Claims are leases of
    `lease_s` seconds (runs.claims). `wandb`: a W&B project where each run trained is logged
    live too.

    A failed run (its loss diverged; runs.mark_failed) is finished: it is not trained again,
    since it would fail the same way, unless `retry_failed`. A group whose training raises
    train.TrainingDiverged does not stop the sweep: the runs it marked failed stay failed, and
    its other unfinished runs are trained again by the next run of the sweep.
    """
    root = Path(root)
    for cfg in configs:
        evaluate.check_run(cfg)  # fail before any training, not halfway through the sweep
    dirs = [run_dir_for(root, cfg) for cfg in configs]
    first: dict[Path, int] = {}
    for i, d in enumerate(dirs):
        if d in first:
            raise ValueError(
                f"runs() returned the same config twice (at {first[d]} and {i}: {d}); "
                "remove the duplicate."
            )
        first[d] = i
    groups = group_by_seed(configs)
    if len(groups) < len(configs):
        print(f"{len(configs)} runs train as {len(groups)} programs (runs that differ only in "
              "seed or packable numbers are packed).")  # fmt: skip
    if progress:  # why each group is a program of its own
        for line in split_reasons(configs, groups):
            tqdm.write(line)
    mine = shard_of(groups, *shard)
    mine_runs = [i for group in mine for i in group]
    for i in mine_runs:  # a finished run is only skipped if it really is this run
        if runs.is_finished(dirs[i]):
            runs.check_same_config(dirs[i], configs[i])

    in_table = {i for i, cfg in enumerate(configs) if runs.run_id(cfg) in set(recorded)}

    def skip(i: int) -> bool:
        if i in in_table:
            return True
        return runs.is_done(dirs[i]) or (runs.is_failed(dirs[i]) and not retry_failed)

    todo = [i for i in mine_runs if not skip(i)]
    failed_before = [i for i in mine_runs if runs.is_failed(dirs[i]) and not runs.is_done(dirs[i])]
    where = f"Shard {shard[0]}/{shard[1]}: " if shard[1] > 1 else ""
    skipped = len(mine_runs) - len(todo)
    print(f"{where}{skipped} of {len(mine_runs)} runs already finished; skipping them.")
    if failed_before and retry_failed:
        print(f"Training {_runs(len(failed_before))} that failed before again (--retry-failed).")
    elif failed_before:
        print(
            f"Of these, {_runs(len(failed_before))} failed (see summary.md); they would fail the "
            "same way, so they are not trained again: pass --retry-failed to do it anyway."
        )

    out = SweepResult(dirs, [], {}, recorded={dirs[i] for i in in_table})
    todo_set = set(todo)
    t0 = time.perf_counter()
    bar = tqdm(total=len(todo), desc="sweep", disable=not progress)
    ahead = grouping.CompileAhead(configs, [g for g in mine if any(i in todo_set for i in g)],
                          checkpoint_every)  # fmt: skip
    # Once its own shard is done, a process takes the groups of other shards that no process
    # holds (their own process may be slow, gone, or not started yet): shards rebalance.
    others = [g for g in groups if g not in mine]
    others = (
        others[shard[0] * len(others) // max(shard[1], 1) :]
        + others[: shard[0] * len(others) // max(shard[1], 1)]
    )
    for group in mine + others:
        own = group in mine
        ahead.next_after(group)
        claimed = []
        try:
            for i in group:
                if skip(i):
                    continue
                if not runs.try_claim(dirs[i], lease_s):
                    if not own:
                        continue
                    worker = (workers or {}).get(runs.holder_pid(dirs[i]))
                    if worker is not None:
                        out.held_by_workers[dirs[i]] = worker
                    else:
                        holder = runs.claim_holder(dirs[i]) or "a process now finished"
                        out.claimed_by_others[dirs[i]] = holder
                elif skip(i):  # finished by its holder since we looked
                    runs.release(dirs[i])
                else:
                    claimed.append(i)
            if claimed and not own:
                out.taken_from_other_shards += [dirs[i] for i in claimed]
                tqdm.write(f"Taking over {_runs(len(claimed))} of another shard, unclaimed.")
            if claimed:
                total = len(todo) + len(out.taken_from_other_shards)
                _train_claimed(
                    configs, dirs, claimed, root, total, out, progress, checkpoint_every, wandb
                )
        finally:
            for i in claimed:
                runs.release(dirs[i])
        if own:
            bar.update(sum(i in todo_set for i in group))
    bar.close()
    ahead.close()
    _report(out, time.perf_counter() - t0)
    return out


def _train_claimed(
    configs: list[RunConfig],
    dirs: list[Path],
    claimed: list[int],
    root: Path,
    total: int,
    out: SweepResult,
    progress: bool,
    checkpoint_every: int,
    wandb: wandb_sink.Project | str | None = None,
) -> None:
    """Train one group's claimed runs (and log them to W&B project `wandb`); sort them into
    trained, failed and unfinished."""
    for i in claimed:  # a retried run starts over: its old failure no longer stands
        runs.clear_failure(dirs[i])
    t_group = time.perf_counter()
    stopped = None
    try:
        train.train_group(
            [configs[i] for i in claimed],
            [dirs[i] for i in claimed],
            progress=progress,
            checkpoint_every=checkpoint_every,
            wandb=wandb,
        )
    except train.TrainingDiverged as e:
        stopped = str(e).rstrip(".")
    seconds = time.perf_counter() - t_group
    together = f" for {len(claimed)} runs trained together" if len(claimed) > 1 else ""
    left = []
    for i in claimed:
        d = dirs[i]
        count = f"[{len(out.trained) + len(out.failed) + 1}/{total}] {d.relative_to(root)}"
        if runs.is_done(d):
            out.trained.append(d)
            rows = runs.read_jsonl(d / runs.EVAL)
            shown = metrics.METRICS["token_accuracy"]
            values = " ".join(f"{r['length']}:{r[shown.name]:.2f}" for r in rows)
            tqdm.write(f"{count} ({seconds:.0f} s{together}) {shown.label} by length {values}")
        elif (record := runs.failure(d)) is not None:
            out.failed.append(d)
            tqdm.write(f"{count} FAILED at step {record['step']}: {record['reason']}")
        else:
            left.append(d)
    out.unfinished += left
    if stopped is not None and left:
        tqdm.write(
            f"Training stopped ({stopped}); {_runs(len(left))} of the group left unfinished, "
            "to be trained again when the sweep is rerun: "
            + ", ".join(str(d.relative_to(root)) for d in left)
        )


def _report(out: SweepResult, seconds: float) -> None:
    if out.trained:
        print(f"Trained {_runs(len(out.trained))} in {seconds:.0f} s.")
    if out.failed:
        print(
            f"{_runs(len(out.failed))} failed (listed in summary.md; a rerun does not train them "
            "again unless --retry-failed):"
        )
        for d in out.failed:
            record = runs.failure(d) or {}
            print(f"  {d}: step {record.get('step')}: {record.get('reason')}")
    if out.unfinished:
        print(f"{_runs(len(out.unfinished))} left unfinished: rerun the sweep to train them.")
    out.held_by_workers = {d: w for d, w in out.held_by_workers.items() if not runs.is_finished(d)}
    if out.held_by_workers:
        print(f"Left {_runs(len(out.held_by_workers))} to this command's workers, still training:")
        for d, worker in out.held_by_workers.items():
            print(f"  {d}: {worker}")
    others = {d: h for d, h in out.claimed_by_others.items() if not runs.is_finished(d)}
    out.claimed_by_others = others
    if others:
        print(f"Left {_runs(len(others))} to the processes that claimed them:")
        for d, holder in others.items():
            print(f"  {d} ({holder}; if that process is gone, delete {d / runs.LOCK})")


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def run_experiment(
    experiment: str,
    out: Path | None = None,
    *,
    results_dir: Path | None = None,
    scale: str | None = None,
    metric: str | None = None,
    shard: tuple[int, int] | None = None,
    progress: bool = True,
    retry_failed: bool = False,
    checkpoint_every: int = train.CHECKPOINT_EVERY,
    workers: int = 1,
    summarize: bool = True,
    tasks: Sequence[str] | None = None,
    tables_only: bool = False,
    lease_s: float = runs.LEASE_S,
    wandb: str | None = None,
) -> tuple[SweepResult, list[Path]]:
    """Run an experiment (`pe-research sweep`): train its runs that are neither in its results
    table nor finished, print its tables, and write the table (and, once every run is in it,
    its page and figures); returns (what the sweep did, the files written).

    `experiment` is a name (a packaged experiment, or a file in ./experiments/) or a path.
    `out` holds the run directories while they train (default runs/<name>, -<scale> for a
    scale); `results_dir` the tables (results.parquet, curves.parquet, results.csv) and the page
    (default `out`). A run whose rows are in that table is not trained again, so a table
    committed from another machine or session resumes the sweep; a table of another code version
    is refused. `metric` defaults to the experiment's METRIC, else token_accuracy; `shard` to
    (process index, process count) of the JAX job; `tasks` (names) keeps only those tasks' runs.

    `workers` > 1 starts that many processes in all on this machine (workers.py); this one
    waits for them and writes the tables. Claims on runs are leases of `lease_s` seconds
    (runs.claims), so processes on several hosts can share `out`. A sweep stopped by Ctrl-C or
    SIGTERM writes the table of the runs finished so far before it exits. `summarize=False`
    trains and writes nothing else; `tables_only` trains nothing. `wandb`: a Weights & Biases
    project where each run trained is also logged live, grouped by the experiment
    (runs.wandb_sink).
    """
    module = experiments.load_experiment(experiment)
    name = experiments.name_of(module)
    metric = metric or getattr(module, "METRIC", metrics.DEFAULT_METRIC)
    out = Path(out or Path("runs") / (name + (f"-{scale}" if scale else "")))
    results_dir = Path(results_dir or out)
    configs = experiments.experiment_runs(module, scale, tasks)
    # The whole grid at this scale: a sweep of some tasks keeps the table's rows of the others.
    defined = {runs.run_id(c) for c in experiments.experiment_runs(module, scale)}
    # Rows of this code join the table only if it is of this code; --tables-only with no run
    # finished here rewrites the table's own pages, whatever its code.
    fresh = any(runs.is_finished(run_dir_for(out, c)) for c in configs)
    table = _table(results_dir, configs, check_code=fresh or not tables_only)
    labels = {"experiment": name, "scale": scale or "cpu"}
    if tables_only:
        done = SweepResult([run_dir_for(out, c) for c in configs], [], {})
        done.recorded = {d for d, c in zip(done.dirs, configs, strict=True)
                         if runs.run_id(c) in table.run_ids}  # fmt: skip
        return done, _write_results(module, done, table, results_dir, labels, metric, defined)
    if workers > 1 and (shard is not None or jax.process_count() > 1):
        raise ValueError(
            "--workers starts processes on this machine that share the whole sweep; it does not "
            "combine with --shard or a multi-process JAX job: drop one of them."
        )
    runs.check_lease(lease_s)
    runs.check_folder(out)
    recorded = {runs.run_id(c) for c in configs} & table.run_ids
    print(cost.estimate([c for c in configs if runs.run_id(c) not in recorded]).text())
    helpers: list[workers_lib.Worker] = []
    with workers_lib.exit_on_sigterm(active=workers > 1 or summarize) as arrived:
        try:
            if workers > 1:
                command = workers_lib.command_line(
                    experiment, out, results_dir, scale=scale, tasks=tasks,
                    retry_failed=retry_failed, checkpoint_every=checkpoint_every, lease_s=lease_s,
                    wandb=wandb,
                )  # fmt: skip
                helpers = workers_lib.start(workers - 1, command, out)
            done = run_sweep(
                configs,
                out,
                shard=shard or (jax.process_index(), jax.process_count()),
                progress=progress,
                retry_failed=retry_failed,
                checkpoint_every=checkpoint_every,
                workers={w.process.pid: w.name for w in helpers},
                recorded=recorded,
                lease_s=lease_s,
                wandb=None if wandb is None else wandb_sink.Project(wandb, group=name),
            )
            done.failed_workers = workers_lib.wait(helpers)
            if done.failed_workers:  # what no live process will finish was their share
                done.abandoned = [
                    d for d in done.dirs if not done.is_finished(d) and not runs.is_claimed(d)
                ]
        except (KeyboardInterrupt, SystemExit):
            # Stopped (Ctrl-C, SIGTERM): keep the rows of what did finish in the table, which a
            # session that ends here would otherwise lose with its run folder.
            arrived()
            if summarize:
                stopped = SweepResult([run_dir_for(out, c) for c in configs], [], {})
                stopped.recorded = {run_dir_for(out, c) for c in configs
                                    if runs.run_id(c) in recorded}  # fmt: skip
                variant = getattr(module, "variant", None)
                _write_tables(stopped, table, results_dir, labels, defined, variant, stopped=True)
            raise
        finally:
            workers_lib.stop(helpers)
    if not summarize:
        return done, []
    return done, _write_results(module, done, table, results_dir, labels, metric, defined)


def _table(results_dir: Path, configs: list[RunConfig], check_code: bool) -> results.Tables:
    """The results table in `results_dir` (empty if none), checked to be of this code."""
    if not results.has_tables(results_dir):
        return results.empty()
    table = results.read(results_dir)
    here = runs.code_version(runs.versions())
    theirs = [c for c in results.code_versions(table.results) if c != here]
    if check_code and theirs:
        raise ValueError(
            f"{results_dir / results.RESULTS} holds runs of other code ({'; '.join(theirs)}) "
            f"than this ({here}); a table holds one code version, so it cannot be resumed: "
            "sweep into another folder (--results), or delete the table to start over."
        )
    ids = {runs.run_id(c) for c in configs}
    if recorded := len(ids & table.run_ids):
        print(f"{results_dir / results.RESULTS}: {recorded} of these runs are recorded there; "
              "they are not trained again.")  # fmt: skip
    return table


def _write_tables(
    done: SweepResult,
    table: results.Tables,
    results_dir: Path,
    labels: dict[str, str],
    defined: set[str],
    variant: Any = None,
    stopped: bool = False,
) -> results.Tables:
    """The table of every finished run of the sweep, written to `results_dir`: the table there
    now (several processes of one sweep write it, each when it ends), or `table` if there is
    none, keeps its rows of the runs the experiment defines (`defined`: every task's, also when
    this sweep trains some); then those of the runs finished in the run folder, which replace
    their earlier rows."""
    fresh = results.from_runs(
        [d for d in done.dirs if runs.is_finished(d)], **labels, variant=variant
    )
    with results.writing(results_dir):
        if results.has_tables(results_dir):
            table = results.read(results_dir)
        merged = results.merge(table.only(defined), fresh)
        if merged.run_ids:
            results.write(results_dir, merged)
    if merged.run_ids:
        why = " (the sweep was stopped: rerun it to train the others)" if stopped else ""
        print(f"Wrote the table of {len(merged.run_ids)} finished runs to {results_dir}{why}.",
              flush=True)  # fmt: skip
    return merged


def _write_results(
    module: types.ModuleType,
    done: SweepResult,
    table: results.Tables,
    results_dir: Path,
    labels: dict[str, str],
    metric: str,
    defined: set[str],
) -> list[Path]:
    """Print the tables of the finished runs, write the results table, and once every run the
    experiment defines at this scale is in it, its page and figures."""
    variant = getattr(module, "variant", None)
    merged = _write_tables(done, table, results_dir, labels, defined, variant)
    if merged.results.empty:
        print(f"No run of the {len(done.dirs)} is finished yet: no tables to write.")
        return []
    rows = results.as_rows(merged.results)
    print(summary.per_length_tables(rows))
    print(summary.generalization_table(rows, metric))
    if efficiency := summary.steps_to_fit_table(rows):
        print("Steps to fit (train.stop_when_fit):\n" + efficiency)
    written = [results_dir / n for n in (results.RESULTS, results.CURVES, results.CSV)]
    missing = len(defined - merged.run_ids)
    if missing:
        print(
            f"{missing} of {len(defined)} runs are not finished (other shards, tasks or "
            f"processes); {results_dir / pages.PAGE} and the figures are written once every run "
            "is: rerun this command then (--tables-only trains nothing)."
        )
        return written
    written += pages.write_sweep_page(pages.read_sweep(results_dir, merged, module))
    print("Wrote " + ", ".join(str(p) for p in written))
    return written


def train_and_report(cfg: RunConfig, out: Path, **train_options) -> list[dict]:
    """Train one run into `out` (`pe-research train`) and print its per-length tables; returns
    its result rows."""
    train.train(cfg, out, **train_options)
    rows = list(runs.eval_rows([out]))
    print(summary.per_length_tables(rows))
    print(summary.fit_line(rows[0]) if rows else "")
    print(f"Run directory: {out}")
    return rows
