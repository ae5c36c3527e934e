"""The `pe-research` command line: thin wrappers that parse typed configs and call the library.

pe-research train [--out DIR] [options] [TASK [task options]] [ENCODING [encoding options]]
pe-research sweep EXPERIMENT [--out DIR] [--scale S] [--metric M] [--shard I/N]
pe-research plot RUN_DIR... --out FIG.png|FIG.pdf [--metric M] [--kind lines|heatmap]
pe-research properties [--out DIR] [--encodings NAME[:K=V,...]...] [--results SWEEP_DIR]
pe-research analyze RUN_DIR
pe-research bench [WORKLOAD...] [--ks 1 2 4 8] [--out runs/bench]
pe-research data build TASK --config NAME [--data-dir DIR] | data build text [--corpus FILE]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Literal

import tyro

from pe_research.config import RunConfig


def _enable_compilation_cache() -> None:
    """Reuse compiled programs across processes (set PE_RESEARCH_JAX_CACHE='' to disable)."""
    import jax

    cache = os.environ.get("PE_RESEARCH_JAX_CACHE", str(Path.home() / ".cache/pe_research/jax"))
    if cache:
        jax.config.update("jax_compilation_cache_dir", cache)
        # Every program, however quick to compile: a second process then compiles nothing.
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def train(
    cfg: Annotated[RunConfig, tyro.conf.arg(name="")],
    out: Path = Path("runs/train"),
    overwrite: bool = False,
    progress: bool = True,
    checkpoint_every: int = 100,
) -> None:
    """Train one model, evaluate it on longer lengths, and write a run directory.

    Checkpoints (orbax, in OUT/checkpoints/) are saved every CHECKPOINT_EVERY steps and at the
    end; rerunning the same command after an interruption resumes from the newest readable one
    and gives the same numbers as an uninterrupted run.

    Example: pe-research train --train.steps 500 --out runs/rev reverse rope --base 500
    """
    from pe_research import runs
    from pe_research import train as train_lib
    from pe_research.sweeps import summary

    _enable_compilation_cache()
    train_lib.train(
        cfg, out, overwrite=overwrite, progress=progress, checkpoint_every=checkpoint_every
    )
    rows = list(runs.eval_rows([out]))
    print(summary.summary_table(rows, "token_accuracy"))
    print(summary.summary_table(rows, "exact_match"))
    print(f"Run directory: {out}")


def sweep(
    experiment: tyro.conf.Positional[str],
    out: Path | None = None,
    scale: str | None = None,
    metric: Literal["token_accuracy", "exact_match", "bits_per_byte"] | None = None,
    shard: str | None = None,
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    progress: bool = True,
    retry_failed: bool = False,
    checkpoint_every: int = 100,
) -> None:
    """Run every config of an experiment (skipping finished runs), print tables, write results.

    EXPERIMENT is a name in ./experiments/ (e.g. `default`) or a path to a .py file; --scale
    picks one of its presets (e.g. `gpu`; default: its CPU size). Default output:
    runs/<experiment name>/ (runs/<name>-<scale>/ with --scale). Once every run is finished,
    writes results.csv, summary.md (METRIC in distribution and at 2x/4x/8x the training length;
    default: the experiment's METRIC, else token_accuracy) and plots (PNG and PDF, lines and
    heatmaps) there.
    Several processes may share OUT. On several hosts, give each --shard I/N, or start them as
    one JAX job (--coordinator HOST:PORT --num-processes N --process-id I, or JAX's environment
    variables): each process then trains shard process_index/process_count.
    A run whose loss diverges is marked failed and shown as failed@step N in the tables; it is
    finished (a rerun skips it, as it would fail the same way) unless --retry-failed.
    """
    from pe_research.sweeps import plotting, summary
    from pe_research.sweeps import sweep as sweep_lib

    sweep_lib.init_distributed(coordinator, num_processes, process_id)
    _enable_compilation_cache()
    if shard is not None:
        index, count = sweep_lib.parse_shard(shard)
    else:
        import jax

        index, count = jax.process_index(), jax.process_count()
    module = sweep_lib.load_experiment(experiment)
    metric = metric or getattr(module, "METRIC", "token_accuracy")  # an experiment may choose
    out = out or Path("runs") / (Path(module.__file__).stem + (f"-{scale}" if scale else ""))
    done = sweep_lib.run_sweep(
        sweep_lib.experiment_runs(module, scale),
        out,
        shard=(index, count),
        progress=progress,
        retry_failed=retry_failed,
        checkpoint_every=checkpoint_every,
    )
    rows = summary.finished_rows(done.dirs)
    if not done.complete:
        print(
            f"{len(done.dirs) - len(done.finished)} of {len(done.dirs)} runs are not finished "
            "(other shards or processes): the tables below cover the finished ones. Rerun this "
            "command once they finish to write results.csv, summary.md and the plots."
        )
    if not rows:
        return
    print(summary.summary_table(rows, "token_accuracy"))
    print(summary.summary_table(rows, "exact_match"))
    print(summary.generalization_table(rows, metric))
    if done.complete:
        paths = summary.write_summary(out, rows, metric) + plotting.write_figures(rows, out)
        print("Wrote " + ", ".join(str(p) for p in paths))


def plot(
    run_dirs: tyro.conf.Positional[tuple[Path, ...]],
    out: Path = Path("extrapolation.png"),
    metric: Literal["token_accuracy", "exact_match", "bits_per_byte"] = "token_accuracy",
    kind: Literal["lines", "heatmap"] = "lines",
) -> None:
    """Plot a metric by evaluation length for finished runs at or below RUN_DIRS.

    One panel per task. lines: one line per encoding (band over seeds), training length dashed,
    chance dotted; heatmap: encodings x lengths, mean over seeds, values written in the cells.
    The format follows the suffix of --out (.png, .pdf, .svg).
    """
    from pe_research import runs
    from pe_research.sweeps import plotting

    rows = list(runs.eval_rows(runs.find_runs(run_dirs)))
    out.parent.mkdir(parents=True, exist_ok=True)
    plotting.save(plotting.FIGURES[kind](rows, metric), out)
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
    from pe_research import encodings as registry
    from pe_research import runs as results_lib
    from pe_research.essay import demonstrations
    from pe_research.essay import report as props

    chosen = [props.parse_encoding(spec) for spec in encodings] or [
        registry.get(name) for name in registry.names()
    ]
    rows = None
    if results is not None:
        rows = list(results_lib.eval_rows(results_lib.find_runs([results])))
    reports = [props.measure(e, max_position=max_position, rows=rows) for e in chosen]
    paths = props.write_report(out, reports)
    print(props.markdown_table(reports))
    if demos:
        data, written = demonstrations.write_demonstrations(
            out, chosen, max_position=precision_positions
        )
        paths += written
        print(demonstrations.describe(data))
    print("Wrote " + ", ".join(str(p) for p in paths))


def analyze(run_dir: tyro.conf.Positional[Path], out: Path | None = None) -> None:
    """Attention maps per layer and head at 1x and 4x the training length and, for rotary
    encodings, frequency usage per head, for a finished run (retrained in memory from its
    config.json, since run directories hold no parameters). Writes to OUT (default
    RUN_DIR/analysis) and prints a short summary.
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
    from pe_research.data import catalog, loader

    if command == "list":
        print(catalog.listing(data_dir))
        return
    if name is None:
        raise ValueError(f"`pe-research data {command}` needs a name: see `pe-research data list`.")
    if command == "read":
        print(loader.read_throughput(name, data_dir))
        return
    report = catalog.build(
        name,
        config,
        data_dir=data_dir,
        corpus=corpus,
        validation_fraction=validation_fraction,
        overwrite=overwrite,
    )
    print(report)
    if not report.spec.startswith("tfds:pe_text/"):
        where = f" --eval.data-dir {data_dir}" if data_dir is not None else ""
        print(f"Evaluate on it: pe-research train --eval.data {report.spec}{where} ...")


def bench(
    workloads: tyro.conf.Positional[tuple[str, ...]] = ("peer", "default", "small-d128"),
    ks: tuple[int, ...] = (1, 2, 4, 8),
    steps: int = 10,
    repeats: int = 5,
    encodings: tuple[str, ...] = (),
    out: Path = Path("runs/bench"),
) -> None:
    """Speed of named workloads: compile time, step time, tokens/s, FLOPs, fraction of this
    machine's fp32 matmul peak (measured in the same run), evaluation compiles over 8 lengths,
    and K packed seeds. Writes OUT/WORKLOAD.json.

    WORKLOADS: peer (DeepMind randomized_positional_encodings' default transformer), default,
    small-d128, and peer-example (the peer's example experiment end to end: 2,000 steps, then
    evaluation at every length 1..100). --encodings overrides the workload's encodings.
    """
    from pe_research import bench as bench_lib

    # No persistent compilation cache here: compile times are measured cold.
    for name in workloads:
        if name == "peer-example":
            row = bench_lib.run_peer_example()
        else:
            row = bench_lib.run_workload(
                name, ks=ks, steps=steps, repeats=repeats, encodings_=encodings or None
            )
        print(f"Wrote {bench_lib.write(out, row)}")


COMMANDS = {
    "train": train,
    "sweep": sweep,
    "plot": plot,
    "properties": properties,
    "analyze": analyze,
    "bench": bench,
    "data": data,
}


def main(argv: list[str] | None = None) -> None:
    try:
        tyro.extras.subcommand_cli_from_dict(
            COMMANDS,
            prog="pe-research",
            description=(
                "Positional encodings for transformers: train, sweep, plot, properties, analyze, "
                "data."
            ),
            args=argv,
            config=(tyro.conf.OmitSubcommandPrefixes,),
        )
    except (ValueError, OSError, FloatingPointError) as e:  # OSError: files, full disk
        print(f"pe-research: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
