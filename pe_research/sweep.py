"""Run an experiment: a Python file whose `runs()` returns a list of RunConfigs.

Each run gets a deterministic directory derived from its config, and a finished run (DONE) is
skipped, so rerunning the same command after an interruption completes the sweep.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import time
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

from tqdm.auto import tqdm

from pe_research import results, train
from pe_research.config import RunConfig, task_label


def load_experiment(name_or_path: str) -> ModuleType:
    """An experiment module, by path (`experiments/default.py`) or by name (`default`),
    looked up in ./experiments/."""
    path = Path(name_or_path)
    if path.suffix != ".py":
        path = Path("experiments") / f"{name_or_path}.py"
    if not path.exists():
        known = sorted(p.stem for p in Path("experiments").glob("*.py") if p.stem != "__init__")
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


def experiment_runs(module: ModuleType) -> list[RunConfig]:
    configs = list(module.runs())
    if not configs:
        raise ValueError(f"{module.__file__}: runs() returned no run configs.")
    for cfg in configs:
        if not isinstance(cfg, RunConfig):
            raise ValueError(
                f"{module.__file__}: runs() returned {type(cfg).__name__}, expected RunConfig."
            )
    return configs


def _safe(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", label).strip("_")


def run_dir_for(root: Path, cfg: RunConfig) -> Path:
    """root/<task>/<encoding>/seed<N>-<hash of the whole config>."""
    digest = hashlib.sha256(json.dumps(cfg.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
    return (
        Path(root)
        / _safe(task_label(cfg.task))
        / _safe(cfg.encoding.label())
        / (f"seed{cfg.seed}-{digest}")
    )


def run_sweep(configs: list[RunConfig], root: Path, *, progress: bool = True) -> list[Path]:
    """Train every config not finished yet; returns all run directories in config order."""
    for cfg in configs:
        cfg.check()  # fail before any training, not halfway through the sweep
    dirs = [run_dir_for(root, cfg) for cfg in configs]
    todo = [(cfg, d) for cfg, d in zip(configs, dirs, strict=True) if not results.is_done(d)]
    if len(todo) < len(configs):
        print(f"{len(configs) - len(todo)} of {len(configs)} runs already finished; skipping them.")
    t0 = time.perf_counter()
    for i, (cfg, run_dir) in enumerate(tqdm(todo, desc="sweep", disable=not progress)):
        t_run = time.perf_counter()
        train.train(cfg, run_dir, progress=progress)
        rows = results.read_jsonl(run_dir / results.EVAL)
        accuracy = " ".join(f"{r['length']}:{r['token_accuracy']:.2f}" for r in rows)
        tqdm.write(
            f"[{i + 1}/{len(todo)}] {task_label(cfg.task)}/{cfg.encoding.label()} "
            f"({time.perf_counter() - t_run:.0f} s) token accuracy by length {accuracy}"
        )
    if todo:
        print(f"Trained {len(todo)} runs in {time.perf_counter() - t0:.0f} s.")
    return dirs


def summary_table(rows: list[dict[str, Any]], metric: str = "token_accuracy") -> str:
    """Text table per task: encodings x evaluation lengths, mean over seeds."""
    cells: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for row in rows:
        cells[row["task"]][row["encoding"]][row["length"]].append(row[metric])
    out = []
    for task in sorted(cells):
        lengths = sorted({n for enc in cells[task].values() for n in enc})
        width = max(len(e) for e in cells[task]) + 2
        out.append(f"{task}: {metric} by evaluation length")
        out.append("encoding".ljust(width) + "".join(f"{n:>7}" for n in lengths))
        for enc in sorted(cells[task]):
            vals = cells[task][enc]
            out.append(
                enc.ljust(width)
                + "".join(
                    f"{sum(vals[n]) / len(vals[n]):7.3f}" if vals.get(n) else "      -"
                    for n in lengths
                )
            )
        out.append("")
    return "\n".join(out)
