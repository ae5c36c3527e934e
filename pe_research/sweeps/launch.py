"""Submit a sweep to SLURM through submitit (`pe-research launch slurm`): an array of N jobs,
job i training shard i of N, and one job that starts once they all end (afterany) and writes the
results table and page. The command returns once they are queued.

`launch local` runs the same jobs as processes of this machine (submitit's LocalExecutor), to try
a launch before queueing it. Local jobs have no dependencies, so it waits for the array before it
submits the table job, and for that job too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import submitit

from pe_research import train
from pe_research.sweeps import experiments, sweep

Engine = Literal["slurm", "local"]


@dataclasses.dataclass(frozen=True)
class Resources:
    """What each training job asks the scheduler for."""

    partition: str | None = None
    gpus_per_task: int | None = None
    cpus_per_task: int | None = None
    time: int = 24 * 60
    """Minutes; a job past it is killed, and a relaunch resumes its runs from checkpoints."""


TABLE_MINUTES = 60
"""The table job's limit: it trains nothing, it reads the finished runs and draws the page."""


@dataclasses.dataclass
class Launched:
    """The jobs of one launch."""

    array: str
    """The array's job id (SLURM names its jobs ARRAY_0 ... ARRAY_N-1); local jobs: their pids."""
    table: str
    logs: Path
    failed: list[Path] = dataclasses.field(default_factory=list)
    """Logs of the jobs that failed, for a launch that waited for its jobs (local)."""


def launch(
    engine: Engine,
    experiment: str,
    count: int,
    *,
    out: Path | None = None,
    results_dir: Path | None = None,
    scale: str | None = None,
    tasks: Sequence[str] | None = None,
    checkpoint_every: int = train.CHECKPOINT_EVERY,
    resources: Resources = Resources(),
) -> Launched:
    """Submit `count` jobs, job i running `sweep.run_experiment(..., shard=(i, count))`, then
    the job writing the tables (`tables_only`). Logs go to OUT/ENGINE/ (OUT as the sweep's)."""
    if count < 1:
        raise ValueError(f"--tasks must be >= 1, got {count}: give the number of jobs to submit.")
    module = experiments.load_experiment(experiment)
    experiments.experiment_runs(module, scale, tasks)  # a bad scale or task fails here, once
    name = experiments.name_of(module)
    if not module.__name__.startswith("pe_research."):  # a file: the jobs may start elsewhere
        experiment = str(Path(module.__file__).resolve())
    out = Path(out or default_out(name, scale)).resolve()
    results_dir = Path(results_dir or out).resolve()
    logs = out / engine
    common = dict(results_dir=results_dir, scale=scale, tasks=tasks, progress=False,
                  checkpoint_every=checkpoint_every)  # fmt: skip
    waits = engine == "local"  # local jobs have no dependencies: wait for the array instead

    executor = _executor(engine, logs, f"pe-{name}", resources)
    with executor.batch():
        array = [
            executor.submit(
                sweep.run_experiment, experiment, out, shard=(i, count), summarize=False, **common
            )
            for i in range(count)
        ]
    # SLURM names an array's jobs ARRAY_0 ... ARRAY_N-1, and ARRAY names them all; local jobs are
    # processes, one id each.
    array_id = " ".join(j.job_id for j in array) if waits else array[0].job_id.split("_")[0]
    failed = _wait(array) if waits else []
    table_resources = Resources(partition=resources.partition, time=TABLE_MINUTES)
    executor = _executor(
        engine, logs, f"pe-{name}-table", table_resources, dependency=f"afterany:{array_id}"
    )
    table = executor.submit(sweep.run_experiment, experiment, out, tables_only=True, **common)
    failed += _wait([table]) if waits else []
    return Launched(array_id, table.job_id, logs, failed)


def default_out(name: str, scale: str | None) -> Path:
    """The sweep's run folder when none is given: runs/NAME, or runs/NAME-SCALE."""
    return Path("runs") / (name + (f"-{scale}" if scale else ""))


def _executor(
    engine: Engine, logs: Path, name: str, resources: Resources, dependency: str | None = None
) -> submitit.AutoExecutor:
    executor = submitit.AutoExecutor(folder=logs, cluster=engine)
    executor.update_parameters(
        name=name,
        timeout_min=resources.time,
        cpus_per_task=resources.cpus_per_task,
        gpus_per_node=resources.gpus_per_task,  # one task per job: per node is per task
        slurm_partition=resources.partition,
        slurm_additional_parameters={"dependency": dependency} if dependency else None,
    )
    return executor


def _wait(jobs: list[submitit.Job]) -> list[Path]:
    """Wait for the jobs; the logs of those that failed."""
    return [j.paths.stderr for j in jobs if j.exception() is not None]
