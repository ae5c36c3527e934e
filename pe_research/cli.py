"""The `pe-research` command line: each command parses its options and calls one library function.

pe-research train [--out DIR] [options] [TASK [task options]] [ENCODING [encoding options]]
pe-research sweep EXPERIMENT [--out DIR] [--results DIR] [--scale S] [--shard I/N] [--workers N]
pe-research launch slurm|local EXPERIMENT --tasks N [--partition P] [--gpus-per-task G] [--time M]
pe-research plot RUNS_OR_TABLES... --out FIG.png|FIG.pdf [--metric M] [--kind lines|heatmap]
pe-research properties [--out DIR] [--encodings NAME[:K=V,...]...] [--results SWEEP_DIR]
pe-research analyze RUN_DIR
pe-research bench [WORKLOAD...] [--ks 1 2 4 8] [--out runs/bench]
pe-research data build TASK --config NAME [--data-dir DIR] | data build text [--corpus FILE]
pe-research tensorboard DIR...
pe-research wandb PATH --project P [--entity E] [--offline]
pe-research report [--results docs/results] [--docs docs] [--readme README.md] [--check]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Literal

import tyro

from pe_research.config import RunConfig
from pe_research.metrics import MetricName

# Each command imports the library it calls when it runs (training, plotting, datasets, the
# essay): parsing arguments, `--help` and argument errors then import only the typed config (jax
# and flax), not matplotlib, orbax or tensorflow-datasets, which took 1.6 s more. The imports
# still go down the layers of pyproject.toml, which the import linter checks inside functions too.


def _enable_compilation_cache() -> None:
    """Reuse compiled programs across processes (set PE_RESEARCH_JAX_CACHE='' to disable): this
    one, and through the environment, those it starts (the jobs of `launch` call the library)."""
    import jax

    cache = os.environ.get("PE_RESEARCH_JAX_CACHE", str(Path.home() / ".cache/pe_research/jax"))
    if cache:
        # Every program, however quick to compile: a second process then compiles nothing.
        settings = {
            "jax_compilation_cache_dir": cache,
            "jax_persistent_cache_min_compile_time_secs": 0.0,
            "jax_persistent_cache_min_entry_size_bytes": 0,
        }
        for name, value in settings.items():
            jax.config.update(name, value)
            os.environ[name.upper()] = str(value)


def train(
    cfg: Annotated[RunConfig, tyro.conf.arg(name="")],
    out: Path = Path("runs/train"),
    overwrite: bool = False,
    progress: bool = True,
    checkpoint_every: int = 100,
    wandb: str | None = None,
) -> None:
    """Train one model, evaluate it on longer lengths, and write a run directory.

    Checkpoints (orbax, in OUT/checkpoints/) are saved every CHECKPOINT_EVERY steps and at the
    end; rerunning the same command after an interruption resumes from the newest readable one
    and gives the same numbers as an uninterrupted run. --wandb PROJECT logs every row to that
    Weights & Biases project too (pip install "pe-research[wandb]"; WANDB_MODE=offline keeps it
    on disk).

    Example: pe-research train --train.steps 500 --out runs/rev reverse rope --base 500
    """
    from pe_research.sweeps import sweep as sweep_lib

    _enable_compilation_cache()
    if wandb is not None:
        _import_wandb()
    sweep_lib.train_and_report(
        cfg,
        out,
        overwrite=overwrite,
        progress=progress,
        checkpoint_every=checkpoint_every,
        wandb=wandb,
    )


def sweep(
    experiment: tyro.conf.Positional[str],
    out: Path | None = None,
    results: Path | None = None,
    scale: str | None = None,
    metric: MetricName | None = None,
    shard: str | None = None,
    shard_count: int | None = None,
    lease: float = 600.0,
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    progress: bool = True,
    retry_failed: bool = False,
    checkpoint_every: int = 100,
    workers: int = 1,
    summarize: bool = True,
    tasks: tuple[str, ...] = (),
    tables_only: bool = False,
    wandb: str | None = None,
) -> None:
    """Run every config of an experiment (skipping finished runs), print tables, write results.

    EXPERIMENT is a name (`pe-research sweep default`; an unknown name lists them) or the path
    of your own experiment file; --scale picks one of its presets (e.g. `gpu`; default: its CPU
    size). Run directories go to --out (default runs/<name>, runs/<name>-<scale> with --scale);
    the results table (results.parquet, curves.parquet, results.csv) to --results (default:
    OUT), and once every run is in it, summary.md and the figures (METRIC: default the
    experiment's, else token_accuracy). A run whose rows are in the --results table is not
    trained again: `--results docs/results/NAME` resumes from the committed table.
    Several processes may share OUT; --workers N trains with N processes on this machine (one
    compiles while another trains). On several hosts, give each --shard I/N, or start them as one
    JAX job (--coordinator HOST:PORT --num-processes N --process-id I).
    A run whose loss diverges is marked failed (failed@step N in the tables) and is not trained
    again unless --retry-failed. --tasks copy reverse runs only those tasks' runs.
    --tables-only trains nothing: it writes the table of the finished runs, and the page if
    every run is in it. --no-summarize trains and writes no tables. Ctrl-C or kill writes the
    table of the runs finished so far before the sweep exits. --wandb PROJECT logs each run
    trained to that Weights & Biases project too, grouped by the experiment.
    """
    from pe_research.sweeps import sweep as sweep_lib

    if workers < 1:
        raise ValueError(f"--workers must be >= 1, got {workers}: give a number of processes.")
    if shard_count is not None and shard != "auto":
        raise ValueError("--shard-count goes with --shard auto (--shard I/N gives the count).")
    if wandb is not None:
        _import_wandb()
    sweep_lib.init_distributed(coordinator, num_processes, process_id)
    _enable_compilation_cache()
    done, _ = sweep_lib.run_experiment(
        experiment,
        out,
        results_dir=results,
        scale=scale,
        metric=metric,
        shard=None if shard is None else sweep_lib.parse_shard(shard, shard_count),
        progress=progress,
        retry_failed=retry_failed,
        checkpoint_every=checkpoint_every,
        workers=workers,
        summarize=summarize,
        tasks=tasks or None,
        tables_only=tables_only,
        lease_s=lease,
        wandb=wandb,
    )
    if done.abandoned:  # a scheduler or script must not read this as success
        logs = ", ".join(done.failed_workers)
        print(
            f"pe-research: error: {len(done.abandoned)} run(s) left unfinished because a worker "
            f"of this command failed (see {logs}); rerun the same command to resume them from "
            "their checkpoints.",
            file=sys.stderr,
        )
        sys.exit(1)


def launch(
    engine: tyro.conf.Positional[Literal["slurm", "local"]],
    experiment: tyro.conf.Positional[str],
    tasks: int,
    out: Path | None = None,
    results: Path | None = None,
    scale: str | None = None,
    only_tasks: tuple[str, ...] = (),
    checkpoint_every: int = 100,
    partition: str | None = None,
    gpus_per_task: int | None = None,
    cpus_per_task: int | None = None,
    time: int = 24 * 60,
) -> None:
    """Submit a sweep as a SLURM job array through submitit (pip install "pe-research[slurm]"):
    TASKS jobs, job i training shard i of TASKS, then one job that starts once they all end and
    writes the results table and page (as `sweep --tables-only`). Prints the job ids and the log
    folder (OUT/slurm/) and returns without waiting. Relaunching resumes: runs in the --results
    table or finished in OUT are not trained again.

    `local` runs the same jobs as processes of this machine, waits for them, and writes the table.
    --out, --results, --scale as for `sweep`; --only-tasks copy reverse keeps those tasks' runs.
    --partition, --gpus-per-task, --cpus-per-task and --time (minutes, per job) go to SLURM.
    """
    try:
        import submitit  # noqa: F401  (the launch module needs it; name the extra that installs it)
    except ImportError:
        print(
            "pe-research: error: launch submits jobs through submitit, which is not installed: "
            'pip install "pe-research[slurm]"',
            file=sys.stderr,
        )
        sys.exit(2)
    from pe_research.sweeps import launch as launch_lib

    _enable_compilation_cache()
    resources = launch_lib.Resources(partition, gpus_per_task, cpus_per_task, time)
    launched = launch_lib.launch(
        engine,
        experiment,
        tasks,
        out=out,
        results_dir=results,
        scale=scale,
        tasks=only_tasks or None,
        checkpoint_every=checkpoint_every,
        resources=resources,
    )
    print(f"Submitted job array {launched.array} ({tasks} jobs) and the table job "
          f"{launched.table} after it; logs in {launched.logs}/")  # fmt: skip
    if launched.failed:
        print("pe-research: error: jobs failed; see " + ", ".join(map(str, launched.failed)),
              file=sys.stderr)  # fmt: skip
        sys.exit(1)


def plot(
    run_dirs: tyro.conf.Positional[tuple[Path, ...]],
    out: Path = Path("extrapolation.png"),
    metric: MetricName = "token_accuracy",
    kind: Literal["lines", "heatmap"] = "lines",
) -> None:
    """Plot a metric by evaluation length for the runs of RUN_DIRS: results folders or tables
    (docs/results/default), or folders of finished run directories.

    One panel per task. lines: one line per encoding (band over seeds), training length dashed,
    chance dotted; heatmap: encodings x lengths, mean over seeds, values written in the cells.
    The format follows the suffix of --out (.png, .pdf, .svg).
    """
    from pe_research.sweeps import plotting

    rows = plotting.plot_runs(run_dirs, out, metric, kind)
    print(f"Wrote {out} ({len({r['run'] for r in rows})} runs)")


def properties(
    out: Path = Path("runs/properties"),
    encodings: tuple[str, ...] = (),
    results: Path | None = None,
    max_position: int = 1023,
    demos: bool = True,
    precision_positions: int = 100_000,
) -> None:
    """Measure the seed essay's properties (Pr1-Pr5, norms, magnitudes, wavelengths) of every
    encoding, and run its demonstrations; writes properties.md, properties.json, figures.

    ENCODINGS: names, optionally with hyper-parameters as NAME:KEY=VALUE,KEY=VALUE (for example
    rope:base=500 cope:init_std=0.02); default every registered encoding. --results: a sweep's
    output folder, for Pr3 (accuracy at 2x/4x/8x the training length). --max-position: N of
    Pr1/Pr2 (positions 0..N). --precision-positions: the low-precision study covers 0..this.
    """
    from pe_research.essay import report as essay_report

    paths = essay_report.run(
        out,
        [essay_report.parse_encoding(spec) for spec in encodings],
        results=results,
        max_position=max_position,
        demos=demos,
        precision_positions=precision_positions,
    )
    print("Wrote " + ", ".join(str(p) for p in paths))


def analyze(run_dir: tyro.conf.Positional[Path], out: Path | None = None) -> None:
    """Attention maps per layer and head at 1x and 4x the training length and, for rotary
    encodings, frequency usage per head, for a finished run, from its final checkpoint (a run
    directory from before checkpoints is retrained in memory from its config.json). Writes to
    OUT (default RUN_DIR/analysis) and prints a short summary.
    """
    from pe_research.essay import analysis

    _enable_compilation_cache()
    summary, paths = analysis.analyze(run_dir, out)
    print(summary)
    print("Wrote " + ", ".join(str(p) for p in paths))


def data(
    command: tyro.conf.Positional[Literal["build", "list", "read"]],
    name: tyro.conf.Positional[str | None] = None,
    config: str | None = None,
    data_dir: Path | None = None,
    corpus: str | None = None,
    validation_fraction: float | None = None,
    overwrite: bool = False,
) -> None:
    """Frozen datasets: tensorflow-datasets builders written as array_record (no TensorFlow).

    build TASK --config NAME: a task's evaluation set (configs L8, L16, L32: lengths 1x-8x the
    training length; -encoder for encoders), scored by a run with --eval.data tfds:pe_TASK/NAME.

    build text [--corpus FILE] [--config NAME]: a byte-level corpus with train/validation splits
    (default: config kjv, the file data/kjv.txt), read by `byte_lm --corpus tfds:pe_text/NAME`.

    list: every dataset and config, marking those built.

    read tfds:BUILDER/CONFIG: read a built evaluation set through grain; print examples/s.

    --data-dir defaults to $PE_RESEARCH_DATA_DIR, else ~/tensorflow_datasets.
    """
    from pe_research.data import catalog

    print(
        catalog.command(
            command,
            name,
            config=config,
            data_dir=data_dir,
            corpus=corpus,
            validation_fraction=validation_fraction,
            overwrite=overwrite,
        )
    )


def bench(
    workloads: tyro.conf.Positional[tuple[str, ...]] = ("peer", "default", "small-d128"),
    ks: tuple[int, ...] = (1, 2, 4, 8),
    steps: int = 10,
    repeats: int = 5,
    encodings: tuple[str, ...] = (),
    out: Path = Path("runs/bench"),
    tiny: bool = False,
    only: tuple[str, ...] = (),
) -> None:
    """Speed of named workloads: compile time, step time, tokens/s, FLOPs, fraction of this
    machine's fp32 matmul peak (measured in the same run), evaluation compiles over 8 lengths,
    and K packed seeds. Writes OUT/WORKLOAD.json.

    WORKLOADS: peer (DeepMind randomized_positional_encodings' default transformer),
    peer-curriculum (the same on lengths uniform in 1..40, with 1, 2, 4, 8 length buckets),
    default, small-d128, and peer-example (the peer's example experiment end to end: 2,000
    steps, then evaluation at every length 1..100). --encodings overrides the workload's
    encodings. `accelerator` runs the accelerator suite (pe_research/bench/accelerator.py:
    model-steps/s and fraction of the chip's bf16 and fp32 peak for packed main-job models, the
    peer's curriculum and a paper-scale model) into OUT/accelerator.json; --tiny shrinks it,
    and --only main-packed paper-scale:float32 runs those of its workloads (NAME or NAME:DTYPE).
    """
    from pe_research import bench as bench_lib
    from pe_research.bench import accelerator

    # No persistent compilation cache here: compile times are measured cold.
    if only and "accelerator" not in workloads:
        raise ValueError(
            f"--only {' '.join(only)} picks workloads of the accelerator suite; add `accelerator` "
            "to the workloads (pe-research bench accelerator --only ...)."
        )
    if "accelerator" in workloads:
        accelerator.run_suite(out, tiny=tiny, only=only, steps=steps, repeats=repeats)
        workloads = tuple(w for w in workloads if w != "accelerator")
    if workloads:
        bench_lib.run(
            workloads, ks=ks, steps=steps, repeats=repeats, encodings_=encodings or None, out=out
        )


def tensorboard(paths: tyro.conf.Positional[tuple[Path, ...]]) -> None:
    """Rebuild the TensorBoard event file of every finished run at or below PATHS from its JSONL
    files (runs trained before event files existed, or whose file was deleted). Training writes
    and updates these files itself; view them with `tensorboard --logdir DIR`.
    """
    from pe_research import runs

    written = runs.write_all_events(paths)
    print(f"Wrote {len(written)} event files. View them: tensorboard --logdir {paths[0]}")


def wandb(
    path: tyro.conf.Positional[Path],
    project: str,
    entity: str | None = None,
    offline: bool = False,
) -> None:
    """Upload finished runs to Weights & Biases: PATH is a results folder (docs/results/default)
    or a folder of run directories. One W&B run per run, named by its run id, grouped by its
    experiment, tagged with its task and encoding: its config, its training and fit-check curves
    (train/*, fit/*), its evaluation table and fit verdict. Uploading again resumes the same W&B
    runs. --offline writes them to ./wandb (or $WANDB_DIR/wandb) for `wandb sync`.
    Needs pip install "pe-research[wandb]".
    """
    from pe_research.sweeps import tracking

    print(tracking.upload(path, project, entity=entity, offline=offline).text())


def _import_wandb() -> None:
    """Fail before any work if wandb is missing (the error says what to install)."""
    from pe_research.runs import wandb_sink

    wandb_sink.import_wandb()


def report(
    results: Path = Path("docs/results"),
    docs: Path = Path("docs"),
    readme: Path | None = Path("README.md"),
    check: bool = False,
) -> None:
    """Write every generated page from the results tables: RESULTS/*/summary.md and figures (one
    per folder holding results.parquet), DOCS/reproductions.md with each paper's figure beside
    ours, and the results block of README (between `<!-- results: begin -->` and `<!-- results:
    end -->`). Nothing is typed: the same tables give the same pages. A table whose runs span
    several commits of the code is not published: its page names the commits and how to rerun it
    at one (the report says which on stderr). --check writes nothing and fails (exit 1) naming
    each page that differs from what the tables give.
    """
    from pe_research.sweeps import report as report_lib

    readme = readme if readme is None or readme.exists() else None
    for line in report_lib.refusals(results):
        print(line, file=sys.stderr)
    if check:
        differences = report_lib.check(results, docs, readme)
        for line in differences:
            print(line, file=sys.stderr)
        if differences:
            sys.exit(1)
        print("Every page is as the tables give it.")
        return
    written = report_lib.write(results, docs, readme)
    print("Wrote " + ", ".join(str(p) for p in written))


COMMANDS = {
    "train": train,
    "sweep": sweep,
    "launch": launch,
    "plot": plot,
    "properties": properties,
    "analyze": analyze,
    "bench": bench,
    "data": data,
    "tensorboard": tensorboard,
    "report": report,
    "wandb": wandb,
}


def main(argv: list[str] | None = None) -> None:
    try:
        tyro.extras.subcommand_cli_from_dict(
            COMMANDS,
            prog="pe-research",
            description=(
                "Positional encodings for transformers: train, sweep, launch, plot, properties, "
                "analyze, data, tensorboard, report, wandb."
            ),
            args=argv,
            config=(tyro.conf.OmitSubcommandPrefixes,),
        )
    # OSError: files, full disk; ImportError: an optional extra not installed (its message
    # names it, as runs.wandb_sink's does)
    except (ValueError, OSError, FloatingPointError, ImportError) as e:
        print(f"pe-research: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
