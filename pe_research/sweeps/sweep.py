"""Run an experiment: a Python file whose `runs()` returns a list of RunConfigs.

Each run gets a deterministic directory derived from its config, and a finished run (DONE) is
skipped, so rerunning the same command after an interruption completes the sweep; a run killed
half-way (no DONE) is trained again. A run whose loss diverged is marked FAILED and counts as
finished (shown as failed in the summary, retried only with `retry_failed`); the sweep goes on
with the next group. Runs that differ only in their seed are trained together
(`train.train_group`).

Several processes can share one output folder: each run is claimed (runs.try_claim) before
training, and a run claimed by a live process is left to it. Several hosts split the grid into
shards (`--shard I/N`, or one shard per JAX process); once every shard is done, any process
writes the summary: results.csv (tidy rows), summary.md and the plots.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import threading
import time
import types
from collections.abc import Mapping, Sequence
from pathlib import Path

import jax
from tqdm.auto import tqdm

from pe_research import metrics, runs, train
from pe_research.config import RunConfig
from pe_research.sweeps import cost, experiments, grouping, plotting, summary
from pe_research.sweeps.grouping import group_by_seed, shard_of, split_reasons
from pe_research.training import evaluate


def run_dir_for(root: Path, cfg: RunConfig) -> Path:
    """root/<task>/<encoding>/seed<N>-<hash> (runs.run_id)."""
    return Path(root) / runs.run_id(cfg)


def parse_shard(spec: str) -> tuple[int, int]:
    """Parse "I/N" (this process takes shard I, counted from 0, of N) into (I, N)."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", spec)
    if not m or not int(m[1]) < int(m[2]):
        raise ValueError(
            f"--shard {spec!r} is not I/N with 0 <= I < N: write e.g. --shard 0/4 on the first "
            "of four hosts and --shard 3/4 on the last."
        )
    return int(m[1]), int(m[2])


def init_distributed(
    coordinator: str | None, num_processes: int | None, process_id: int | None
) -> None:
    """Join a multi-process JAX job (coordinator HOST:PORT, or JAX_COORDINATOR_ADDRESS);
    without either, a no-op. Call it before any JAX computation."""
    import jax

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

    @property
    def finished(self) -> list[Path]:
        """Runs that are done or failed: neither is trained again by a rerun."""
        return [d for d in self.dirs if runs.is_finished(d)]

    @property
    def failed_runs(self) -> list[Path]:
        """Every failed run of the experiment (this process's and earlier ones)."""
        return [d for d in self.dirs if runs.is_finished(d) and not runs.is_done(d)]

    @property
    def complete(self) -> bool:
        return all(runs.is_finished(d) for d in self.dirs)


def run_sweep(
    configs: list[RunConfig],
    root: Path,
    *,
    shard: tuple[int, int] = (0, 1),
    progress: bool = True,
    retry_failed: bool = False,
    checkpoint_every: int = train.CHECKPOINT_EVERY,
    workers: Mapping[int, str] | None = None,
) -> SweepResult:
    """Train every run of this shard that is neither finished nor claimed by a live process.
    `workers` names, by PID, the processes on this host that this command started to share the
    sweep (`run_experiment`'s `workers`), so that the runs they hold are reported as theirs.

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

    def skip(i: int) -> bool:
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

    out = SweepResult(dirs, [], {})
    todo_set = set(todo)
    t0 = time.perf_counter()
    bar = tqdm(total=len(todo), desc="sweep", disable=not progress)
    ahead = grouping.CompileAhead(configs, [g for g in mine if any(i in todo_set for i in g)],
                          checkpoint_every)  # fmt: skip
    for group in mine:
        ahead.next_after(group)
        claimed = []
        try:
            for i in group:
                if skip(i):
                    continue
                if not runs.try_claim(dirs[i]):
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
            if claimed:
                _train_claimed(
                    configs, dirs, claimed, root, len(todo), out, progress, checkpoint_every
                )
        finally:
            for i in claimed:
                runs.release(dirs[i])
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
) -> None:
    """Train one group's claimed runs; sort them into trained, failed and unfinished."""
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


def _exit_on_sigterm() -> tuple[object, threading.Event] | None:
    """Make SIGTERM raise SystemExit(143) in this (main) thread. Returns the handler it replaced,
    for the caller to restore, and an event the caller sets once the exit reached it. A no-op off
    the main thread (returns None).

    Python ignores an exception raised inside a garbage-collection callback (it prints "Exception
    ignored in: <function _xla_gc_callback ...>"), and JAX runs one on every collection, so a
    signal that lands there would be lost and the sweep train on. Until the caller says the exit
    arrived, the handler sends the signal again a second later."""
    arrived = threading.Event()

    def send_again(signum: int) -> None:
        if not arrived.is_set():
            os.kill(os.getpid(), signum)

    def handler(signum: int, frame: object) -> None:
        if not arrived.is_set():
            again = threading.Timer(1.0, send_again, (signum,))
            again.daemon = True
            again.start()
        raise SystemExit(128 + signum)

    try:
        return signal.signal(signal.SIGTERM, handler), arrived
    except ValueError:  # not the main thread: signals are the main thread's
        return None


def _keep_records(finished: list[Path], out: Path, keep: Path, stopped: bool = False) -> None:
    kept = runs.copy_records(finished, out, keep)
    why = " (the sweep was stopped: the others resume from their checkpoints)" if stopped else ""
    print(f"Kept the records of {len(kept)} finished runs in {keep}{why}.", flush=True)


def run_experiment(
    experiment: str,
    out: Path | None = None,
    *,
    scale: str | None = None,
    metric: str | None = None,
    shard: tuple[int, int] | None = None,
    progress: bool = True,
    retry_failed: bool = False,
    checkpoint_every: int = train.CHECKPOINT_EVERY,
    workers: int = 1,
    summarize: bool = True,
    tasks: Sequence[str] | None = None,
    keep_records: Path | None = None,
    tables_only: bool = False,
) -> tuple[SweepResult, list[Path]]:
    """Run an experiment file (`pe-research sweep`), print its tables, and once every run is
    finished write results.csv, summary.md and the figures; returns (what the sweep did, the
    files written).

    `experiment` is a name in ./experiments/ or a path; `out` defaults to runs/<name> (with
    -<scale> for a scale); `metric` to the experiment's METRIC, else token_accuracy; `shard`
    to (process index, process count) of the JAX job; `tasks` (names) keeps only those tasks'
    runs, in the same run directories as the whole sweep's.

    `workers` > 1 starts that many processes in all on this machine (this one and workers - 1
    started here, logging to OUT/worker-I.log), each claiming the next unclaimed group of runs:
    compilation is single-threaded, so on a small CPU one process compiles while another
    trains. This process waits for them and writes the results. `summarize=False` trains only.

    `keep_records` (a folder) receives, once training stops, the record of every finished run of
    the sweep (runs.copy_records: no checkpoints), at the same place below it as below `out`:
    small enough to commit, a sweep into it writes the tables, and copied back into `out` its
    runs are skipped. A sweep stopped by Ctrl-C or SIGTERM keeps the runs finished so far.

    `tables_only` trains nothing: it prints the tables of the finished runs, and writes the files
    only if every run (of `tasks`, where given) is finished, so that a missing record never
    starts hours of training when all one wanted was the tables of kept records.
    """
    module = experiments.load_experiment(experiment)
    metric = metric or getattr(module, "METRIC", metrics.DEFAULT_METRIC)
    out = out or Path("runs") / (Path(module.__file__).stem + (f"-{scale}" if scale else ""))
    configs = experiments.experiment_runs(module, scale, tasks)
    if tables_only:
        return _tables_only(module, configs, out, scale, metric, keep_records)
    print(cost.estimate(configs).text())
    if workers > 1 and (shard is not None or jax.process_count() > 1):
        raise ValueError(
            "--workers starts processes on this machine that share the whole sweep; it does not "
            "combine with --shard or a multi-process JAX job: drop one of them."
        )
    helpers = []
    # A SIGTERM (kill, a scheduler's cancel) exits through the `finally` below, which stops the
    # workers (without this they would train on, orphaned, after this process is gone) and keeps
    # the records of the runs finished so far.
    stop = _exit_on_sigterm() if workers > 1 or keep_records is not None else None
    try:
        for i in range(1, workers):
            command = [sys.executable, "-m", "pe_research.cli", "sweep", experiment, "--out",
                       str(out), "--no-progress", "--no-summarize",
                       "--checkpoint-every", str(checkpoint_every)]  # fmt: skip
            command += (["--scale", scale] if scale else []) + (
                ["--retry-failed"] if retry_failed else []
            )
            command += ["--tasks", *tasks] if tasks else []
            out.mkdir(parents=True, exist_ok=True)
            log = open(out / f"worker-{i}.log", "w")
            helpers.append((subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), log))
            time.sleep(2)  # let it claim the first group before this process looks
        names = {
            proc.pid: f"worker {i} (pid {proc.pid}, log {log.name})"
            for i, (proc, log) in enumerate(helpers, start=1)
        }
        done = run_sweep(
            configs,
            out,
            shard=shard or (jax.process_index(), jax.process_count()),
            progress=progress,
            retry_failed=retry_failed,
            checkpoint_every=checkpoint_every,
            workers=names,
        )
        running = [names[proc.pid] for proc, _ in helpers if proc.poll() is None]
        if running:
            print(f"Waiting for the workers of this command still training: {', '.join(running)}.")
        for i, (proc, log) in enumerate(helpers, start=1):
            if proc.wait() != 0:
                print(f"Worker {i} exited with status {proc.returncode}: see {log.name}.")
                done.failed_workers.append(log.name)
        if done.failed_workers:  # what no live process will finish was the failed workers' share
            done.abandoned = [
                d for d in done.dirs if not runs.is_finished(d) and not runs.is_claimed(d)
            ]
    except (KeyboardInterrupt, SystemExit):
        # Stopped (Ctrl-C, SIGTERM) with runs unfinished: keep what did finish, which a session
        # that ends here would otherwise lose with its run folder.
        if stop is not None:
            stop[1].set()
        if keep_records is not None:
            finished = [d for c in configs if runs.is_finished(d := run_dir_for(out, c))]
            _keep_records(finished, out, keep_records, stopped=True)
        raise
    finally:
        for proc, log in helpers:
            if proc.poll() is None:
                proc.terminate()
            log.close()
        if stop is not None:
            stop[1].set()
            signal.signal(signal.SIGTERM, stop[0])
    if keep_records is not None:
        _keep_records(done.finished, out, keep_records)
    if not summarize:
        return done, []
    if not done.complete:
        print(
            f"{len(done.dirs) - len(done.finished)} of {len(done.dirs)} runs are not finished "
            "(other shards or processes): the tables below cover the finished ones. Rerun this "
            "command once they finish to write results.csv, summary.md and the plots."
        )
    return done, _tables(module, done, out, scale, metric)


def _tables_only(
    module: types.ModuleType,
    configs: list[RunConfig],
    out: Path,
    scale: str | None,
    metric: str,
    keep_records: Path | None,
) -> tuple[SweepResult, list[Path]]:
    """`run_experiment(tables_only=True)`: the tables of the finished runs, training none."""
    done = SweepResult([run_dir_for(out, cfg) for cfg in configs], [], {})
    finished = set(done.finished)
    for cfg, run_dir in zip(configs, done.dirs, strict=True):
        if run_dir in finished:  # a record is only read if it really is this run
            runs.check_same_config(run_dir, cfg)
    if keep_records is not None:
        _keep_records(done.finished, out, keep_records)
    missing = [d for d in done.dirs if d not in finished]
    if missing:
        print(
            f"--tables-only: {len(missing)} of {len(done.dirs)} runs in {out} are not finished "
            f"(first: {missing[0]}), so no files are written; the tables below cover the "
            f"{len(done.finished)} finished. Pick finished tasks with --tasks, or drop "
            "--tables-only to train the rest."
        )
    return done, _tables(module, done, out, scale, metric)


def _tables(
    module: types.ModuleType, done: SweepResult, out: Path, scale: str | None, metric: str
) -> list[Path]:
    """Print the tables of `done`'s finished runs; once every run is finished, write
    results.csv, summary.md and the figures (the experiment's own included) to `out`."""
    rows = summary.finished_rows(done.dirs)
    if not rows:
        return []
    print(summary.per_length_tables(rows))
    print(summary.generalization_table(rows, metric))
    if efficiency := summary.steps_to_fit_table(rows):
        print("Steps to fit (train.stop_when_fit):\n" + efficiency)
    published = module.paper_vs_here(rows) if hasattr(module, "paper_vs_here") else ""
    if (protocol := getattr(module, "PROTOCOL", None)) is not None:
        published = protocol.markdown(ran=scale or "cpu") + "\n" + published
    if published:
        print("Paper vs here:\n" + published)
    sections = module.sections(rows) if hasattr(module, "sections") else ""
    if sections:
        print(sections)
    written = []
    if done.complete:
        written = summary.write_summary(out, rows, metric, published, sections)
        written += plotting.write_figures(rows, out)
        for stem, fig in (module.figures(rows) if hasattr(module, "figures") else {}).items():
            for fmt in ("png", "pdf"):
                written.append(out / f"{stem}.{fmt}")
                plotting.save(fig, written[-1])
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
