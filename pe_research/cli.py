"""The `pe-research` command line: thin wrappers that parse typed configs and call the library.

pe-research train [--out DIR] [options] [TASK [task options]] [ENCODING [encoding options]]
pe-research sweep EXPERIMENT [--out DIR]
pe-research plot RUN_DIR... --out FIG.png
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
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def train(
    cfg: Annotated[RunConfig, tyro.conf.arg(name="")],
    out: Path = Path("runs/train"),
    overwrite: bool = False,
    progress: bool = True,
) -> None:
    """Train one model, evaluate it on longer lengths, and write a run directory.

    Example: pe-research train --train.steps 500 --out runs/rev reverse rope --base 500
    """
    from pe_research import results, sweep
    from pe_research import train as train_lib

    _enable_compilation_cache()
    train_lib.train(cfg, out, overwrite=overwrite, progress=progress)
    rows = list(results.eval_rows([out]))
    print(sweep.summary_table(rows, "token_accuracy"))
    print(sweep.summary_table(rows, "exact_match"))
    print(f"Run directory: {out}")


def sweep(
    experiment: tyro.conf.Positional[str],
    out: Path | None = None,
    progress: bool = True,
) -> None:
    """Run every config of an experiment (skipping finished runs), print tables, write a plot.

    EXPERIMENT is a name in ./experiments/ (e.g. `default`) or a path to a .py file.
    Default output: runs/<experiment name>/.
    """
    from pe_research import plotting, results
    from pe_research import sweep as sweep_lib

    _enable_compilation_cache()
    module = sweep_lib.load_experiment(experiment)
    out = out or Path("runs") / Path(module.__file__).stem
    dirs = sweep_lib.run_sweep(sweep_lib.experiment_runs(module), out, progress=progress)
    rows = list(results.eval_rows(dirs))
    print(sweep_lib.summary_table(rows, "token_accuracy"))
    print(sweep_lib.summary_table(rows, "exact_match"))
    for metric in plotting.METRICS:
        path = out / f"extrapolation_{metric}.png"
        plotting.save(plotting.extrapolation_figure(rows, metric), path)
        print(f"Wrote {path}")


def plot(
    run_dirs: tyro.conf.Positional[tuple[Path, ...]],
    out: Path = Path("extrapolation.png"),
    metric: Literal["token_accuracy", "exact_match"] = "token_accuracy",
) -> None:
    """Plot accuracy vs evaluation length for finished runs at or below RUN_DIRS.

    One panel per task, one line per encoding (band over seeds), training length dashed.
    The format follows the suffix of --out (.png, .pdf, .svg).
    """
    from pe_research import plotting, results

    rows = list(results.eval_rows(results.find_runs(run_dirs)))
    out.parent.mkdir(parents=True, exist_ok=True)
    plotting.save(plotting.extrapolation_figure(rows, metric), out)
    print(f"Wrote {out} ({len({r['run'] for r in rows})} runs)")


COMMANDS = {"train": train, "sweep": sweep, "plot": plot}


def main(argv: list[str] | None = None) -> None:
    try:
        tyro.extras.subcommand_cli_from_dict(
            COMMANDS,
            prog="pe-research",
            description="Positional encodings for transformers: train, sweep, plot.",
            args=argv,
            config=(tyro.conf.OmitSubcommandPrefixes,),
        )
    except (ValueError, FileNotFoundError, FileExistsError, FloatingPointError) as e:
        print(f"pe-research: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
