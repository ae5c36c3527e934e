"""Experiments: one study per module, a `runs(scale=...)` function returning run configs; the
presets their scales share.

The project's experiments live in the top-level experiments/ folder, installed as the package
`pe_research.experiments`, so that `pe-research sweep NAME` finds them from any folder; a
user's own file runs by path, or by name from ./experiments/. An experiment's docstring says
what it asks, the command, its cost and where its page is.

`SCALES` maps a scale name (`cpu`, the default, `gpu`, and `paper` for a reproduction at the
paper's size) to its preset; experiments at the standard size use `STANDARD_SCALES`. An
experiment that reproduces a paper defines `PROTOCOL` (sweeps.protocol.Protocol: the paper's
protocol beside ours, every difference with its reason) and may define `paper_vs_here(rows) ->
str` (the paper's numbers beside the sweep's, see `summary.published_table`) and `headline(rows)`
(the paper's figure beside ours, for docs/reproductions.md). Any experiment may define
`sections(rows) -> str` (markdown at the end of its page), `figures(rows) -> dict[str,
Figure]` (figures beside its page; experiments/leaderboard.py does both) and `variant(cfg) ->
str` (what else than its encoding tells a run apart: its series becomes "ENCODING | VARIANT").
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import pkgutil
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from pe_research.config import ModelConfig, RunConfig, TrainConfig

GPU_MODEL = ModelConfig(num_layers=4, d_model=256, num_heads=8, mlp_dim=1024)
"""The model of the `gpu` scale: sized for an accelerator, not for 2 CPU cores."""
GPU_TRAIN = TrainConfig(steps=5000, batch_size=128, train_length=32, learning_rate=5e-4)
"""The training of the `gpu` scale."""
CPU_TRAIN = TrainConfig(
    steps=2000,
    train_length=16,
    length_buckets=4,
    stop_when_fit=True,
    fit_check_every=100,
    log_every=100,
)
"""The `cpu` scale's training: until fit (exact match >= 0.95 at the training length, checked
every 100 steps), at most 2,000 steps, lengths drawn in 4 stratified buckets."""
STANDARD_SCALES = {
    "cpu": (ModelConfig(), CPU_TRAIN),
    "gpu": (GPU_MODEL, GPU_TRAIN),
}
"""(model, train) per scale for experiments on 1-D tasks at the standard training lengths."""


FIT_MODEL = ModelConfig(num_layers=4)
"""The main job's model (experiments/default.py): 4 layers, d_model 64, 4 heads. NoPE needs the
depth to work out positions (2 layers reach .22 exact match on copy in 3,000 steps, 4 fit it)."""
FIT_TRAIN = TrainConfig(
    steps=2000,
    train_length=16,
    learning_rate=3e-3,
    warmup_steps=200,
    length_buckets=4,
    stop_when_fit=True,
    fit_check_every=100,
    log_every=100,
)
"""The fit experiments' training (mcgill, addition, leaderboard, ...): until fit (exact match
>= 0.95 at the training length, checked every 100 steps), at most 2,000 steps, lr 3e-3 after 200
warm-up steps, cosine decay over the 2,000, lengths drawn in 4 stratified buckets. Models fit as
the learning rate anneals, so the cap sets when (docs/notes/main-job-recipe.md). The main job
trains at lr 5e-3 after 300 warm-up steps (default.MAIN_TRAIN)."""


def gpu_train(**changes) -> TrainConfig:
    """The `gpu` scale's training with some fields changed (e.g. another training length)."""
    return dataclasses.replace(GPU_TRAIN, **changes)


PAPER = "paper"
"""The scale that runs a paper's protocol at the paper's size (model, optimisation, data and
evaluation as published), where an experiment has one; its docstring's protocol table says what
still differs."""


def names() -> list[str]:
    """Every experiment by name: the packaged ones (pe_research.experiments), then the files of
    ./experiments/ that are not packaged (a user's own)."""
    package = importlib.import_module("pe_research.experiments")  # the layer above this one
    found = [m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")]
    local = [p.stem for p in sorted(LOCAL.glob("*.py")) if not p.stem.startswith("_")]
    named = [n for n in found + [n for n in local if n not in found] if _is_experiment(n)]
    return sorted(named)


def _is_experiment(name: str) -> bool:
    try:
        return callable(getattr(load_experiment(name), "runs", None))
    except ValueError:  # a module beside the experiments that is not one (paper data, ...)
        return False


def with_paper_scale() -> list[str]:
    """The experiments that define a `paper` scale."""
    return [n for n in names() if PAPER in getattr(load_experiment(n), "SCALES", {})]


LOCAL = Path("experiments")
"""Where a user's own experiment files are found by name (from the current folder)."""


def load_experiment(name_or_path: str) -> ModuleType:
    """An experiment module, by path (`my_study.py`, `experiments/default.py`) or by name
    (`default`): a packaged experiment (pe_research.experiments.NAME), else ./experiments/NAME.py.
    """
    path = Path(name_or_path)
    if path.suffix == ".py" or len(path.parts) > 1:
        return _from_file(path)
    if importlib.util.find_spec(f"pe_research.experiments.{name_or_path}") is not None:
        module = importlib.import_module(f"pe_research.experiments.{name_or_path}")
    elif (LOCAL / f"{name_or_path}.py").exists():
        return _from_file(LOCAL / f"{name_or_path}.py")
    else:
        raise FileNotFoundError(
            f"No experiment {name_or_path!r}. Known experiments: {', '.join(names())} (packaged, "
            f"and files in ./{LOCAL}/); or give the path of your own file (my_study.py)."
        )
    return _checked(module, name_or_path)


def _from_file(path: Path) -> ModuleType:
    if not path.exists():
        raise FileNotFoundError(
            f"No experiment file {path}. Known experiments by name: {', '.join(names())}."
        )
    spec = importlib.util.spec_from_file_location(f"pe_experiment_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return _checked(module, str(path))


def _checked(module: ModuleType, where: str) -> ModuleType:
    if not callable(getattr(module, "runs", None)):
        raise ValueError(f"{where} must define runs() -> list[RunConfig]: it is not an experiment.")
    return module


def name_of(module: ModuleType) -> str:
    """The experiment's name: its module's (default) or its file's stem (my_study)."""
    return Path(module.__file__).stem


def experiment_runs(
    module: ModuleType, scale: str | None = None, tasks: Sequence[str] | None = None
) -> list[RunConfig]:
    """The experiment's run configs; `scale` picks a preset of runs(scale=...) (e.g. "gpu");
    `tasks` keeps only the runs of those tasks (by name)."""
    if scale is None:
        configs = list(module.runs())
    elif "scale" in inspect.signature(module.runs).parameters:
        presets = getattr(module, "SCALES", None)
        if scale == PAPER and (presets is None or PAPER not in presets):
            raise ValueError(
                f"{module.__file__} has no `{PAPER}` scale: it does not reproduce a paper at the "
                f"paper's size (its scales: {', '.join(presets or ['cpu'])}). Experiments with "
                f"one: {', '.join(with_paper_scale()) or 'none'}; or pass one of its own scales "
                "to --scale."
            )
        if presets is not None and scale not in presets:
            raise ValueError(
                f"{module.__file__} has no scale {scale!r}; it has: {', '.join(presets)}. Pass "
                "one of them to --scale, or no --scale for its CPU size."
            )
        try:
            configs = list(module.runs(scale=scale))
        except KeyError as e:
            raise ValueError(
                f"{module.__file__}: runs(scale={scale!r}) does not know that scale ({e}); "
                "pass one it knows to --scale, or no --scale for its CPU size."
            ) from None
    else:
        raise ValueError(f"{module.__file__}: runs() takes no scale; drop --scale.")
    if not configs:
        raise ValueError(f"{module.__file__}: runs() returned no run configs.")
    for cfg in configs:
        if not isinstance(cfg, RunConfig):
            raise ValueError(
                f"{module.__file__}: runs() returned {type(cfg).__name__}, expected RunConfig."
            )
    if tasks:
        known = sorted({cfg.task.name for cfg in configs})
        if unknown := sorted(set(tasks) - set(known)):
            raise ValueError(
                f"{module.__file__} has no runs of task(s) {', '.join(unknown)}; its tasks are: "
                f"{', '.join(known)}. Pass some of those to --tasks, or drop it for all."
            )
        configs = [cfg for cfg in configs if cfg.task.name in tasks]
    return configs
