"""Experiment files: one study per file in ./experiments/, a `runs(scale=...)` function returning
run configs; the presets its scales share. A module in ./experiments/ without `runs` is a tool
beside the experiments (mcgill_paper_numbers.py), not an experiment.

An experiment file's docstring gives the exact command, the runtime and the result of a real
run. `SCALES` maps a scale name (`cpu`, the default, `gpu`, and `paper` for a reproduction at
the paper's size) to its preset; experiments that study length generalization at the standard
size use `STANDARD_SCALES`. An experiment that reproduces a paper defines `PROTOCOL`
(sweeps.protocol.Protocol: the paper's protocol beside ours, every difference with its reason;
its text is in the docstring) and may define `paper_vs_here(rows) -> str`: a markdown section
setting the paper's numbers beside the sweep's (see `summary.published_table`), printed by the
sweep and written to its summary.md after the protocol table. Any experiment may define
`sections(rows) -> str`, markdown sections of its own printed by the sweep and written at the end
of summary.md, and `figures(rows) -> dict[str, Figure]`, figures written next to the sweep's as
<stem>.png and .pdf (experiments/leaderboard.py does both).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import inspect
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
the learning rate anneals, so the cap sets when: at cap 2,000 the main job's runs fit by
100-1,900 steps, at cap 4,000 and lr 1e-3 they needed up to 3,300, and at cap 1,500 the hardest
runs no longer fit (scripts/search_recipes.py, table in experiments/default.py). The main job
itself trains at lr 5e-3 after 300 warm-up steps since 2026-12-03 (default.MAIN_TRAIN)."""


def gpu_train(**changes) -> TrainConfig:
    """The `gpu` scale's training with some fields changed (e.g. another training length)."""
    return dataclasses.replace(GPU_TRAIN, **changes)


PAPER = "paper"
"""The scale that runs a paper's protocol at the paper's size (model, optimisation, data and
evaluation as published), where an experiment has one; its docstring's protocol table says what
still differs."""


def experiment_files(folder: Path = Path("experiments")) -> list[Path]:
    """The experiments in `folder`: its .py files that define `runs` at the top level (read, not
    imported; the modules beside them without `runs` are tools, such as mcgill_paper_numbers.py)."""

    def defines_runs(path: Path) -> bool:
        names = set()
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.FunctionDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        return "runs" in names

    return [p for p in sorted(folder.glob("*.py")) if defines_runs(p)]


def with_paper_scale(folder: Path = Path("experiments")) -> list[str]:
    """The experiments in `folder` that define a `paper` scale."""
    return [
        path.stem
        for path in experiment_files(folder)
        if PAPER in getattr(load_experiment(str(path)), "SCALES", {})
    ]


def load_experiment(name_or_path: str) -> ModuleType:
    """An experiment module, by path (`experiments/default.py`) or by name (`default`),
    looked up in ./experiments/."""
    path = Path(name_or_path)
    if path.suffix != ".py":
        path = Path("experiments") / f"{name_or_path}.py"
    if not path.exists():
        known = [p.stem for p in experiment_files()] if Path("experiments").is_dir() else []
        raise FileNotFoundError(
            f"No experiment file {path}. Known experiments in ./experiments: "
            f"{', '.join(known) or 'none (run from the repository root)'}."
        )
    spec = importlib.util.spec_from_file_location(f"pe_experiment_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "runs", None)):
        raise ValueError(f"{path} must define runs() -> list[RunConfig].")
    return module


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
