"""Run an experiment: a Python file whose `runs()` returns a list of RunConfigs.

Each run gets a deterministic directory derived from its config, and a finished run (DONE) is
skipped, so rerunning the same command after an interruption completes the sweep; a run killed
half-way (no DONE) is redone from scratch. Runs that differ only in their seed are trained
together (`train.train_group`).

Several processes can share one output folder: each run is claimed (results.try_claim) before
training, and a run claimed by a live process is left to it. Several hosts split the grid into
shards (`--shard I/N`, or one shard per JAX process); once every shard is done, any process
writes the summary: results.csv (tidy rows), summary.md and the plots.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import inspect
import json
import os
import re
import time
from pathlib import Path
from types import ModuleType

from tqdm.auto import tqdm

from pe_research import results, train
from pe_research.config import RunConfig, encoding_label, task_label


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


def experiment_runs(module: ModuleType, scale: str | None = None) -> list[RunConfig]:
    """The experiment's run configs; `scale` picks a preset of runs(scale=...) (e.g. "gpu")."""
    if scale is None:
        configs = list(module.runs())
    elif "scale" in inspect.signature(module.runs).parameters:
        presets = getattr(module, "SCALES", None)
        if presets is not None and scale not in presets:
            raise ValueError(
                f"{module.__file__} has no scale {scale!r}; it has: {', '.join(presets)}."
            )
        configs = list(module.runs(scale=scale))
    else:
        raise ValueError(f"{module.__file__}: runs() takes no scale; drop --scale.")
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
        / _safe(encoding_label(cfg))
        / (f"seed{cfg.seed}-{digest}")
    )


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


def group_by_seed(configs: list[RunConfig]) -> list[list[int]]:
    """Indices of configs trained together (`train.group_key`: they differ only in their seed
    or evaluation encoding), groups in order of first appearance."""
    groups: dict[RunConfig, list[int]] = {}
    for i, cfg in enumerate(configs):
        groups.setdefault(train.group_key(cfg), []).append(i)
    return list(groups.values())


def shard_of(groups: list[list[int]], index: int, count: int) -> list[list[int]]:
    """Every count-th group from `index` on: shards partition the groups, seeds stay together."""
    return groups[index::count]


@dataclasses.dataclass
class SweepResult:
    """What one process's sweep found and did."""

    dirs: list[Path]
    """Every run of the experiment, in config order."""
    trained: list[Path]
    """Runs this process trained."""
    claimed_by_others: dict[Path, str]
    """Runs left unfinished to the live processes that claimed them -> who."""

    @property
    def finished(self) -> list[Path]:
        return [d for d in self.dirs if results.is_done(d)]

    @property
    def complete(self) -> bool:
        return all(results.is_done(d) for d in self.dirs)


def run_sweep(
    configs: list[RunConfig],
    root: Path,
    *,
    shard: tuple[int, int] = (0, 1),
    progress: bool = True,
) -> SweepResult:
    """Train every run of this shard that is neither finished nor claimed by a live process."""
    root = Path(root)
    for cfg in configs:
        cfg.check()  # fail before any training, not halfway through the sweep
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
    mine = shard_of(groups, *shard)
    runs = [i for group in mine for i in group]
    todo = [i for i in runs if not results.is_done(dirs[i])]
    where = f"Shard {shard[0]}/{shard[1]}: " if shard[1] > 1 else ""
    print(f"{where}{len(runs) - len(todo)} of {len(runs)} runs already finished; skipping them.")

    trained: list[Path] = []
    others: dict[Path, str] = {}
    todo_set = set(todo)
    t0 = time.perf_counter()
    bar = tqdm(total=len(todo), desc="sweep", disable=not progress)
    for group in mine:
        claimed = []
        try:
            for i in group:
                if results.is_done(dirs[i]):
                    continue
                if not results.try_claim(dirs[i]):
                    others[dirs[i]] = results.claim_holder(dirs[i]) or "a process now finished"
                elif results.is_done(dirs[i]):  # finished by its holder since we looked
                    results.release(dirs[i])
                else:
                    claimed.append(i)
            if claimed:
                t_group = time.perf_counter()
                train.train_group(
                    [configs[i] for i in claimed], [dirs[i] for i in claimed], progress=progress
                )
                seconds = time.perf_counter() - t_group
                together = f" for {len(claimed)} runs trained together" if len(claimed) > 1 else ""
                for i in claimed:
                    trained.append(dirs[i])
                    rows = results.read_jsonl(dirs[i] / results.EVAL)
                    accuracy = " ".join(f"{r['length']}:{r['token_accuracy']:.2f}" for r in rows)
                    tqdm.write(
                        f"[{len(trained)}/{len(todo)}] {dirs[i].relative_to(root)} "
                        f"({seconds:.0f} s{together}) "
                        f"token accuracy by length {accuracy}"
                    )
        finally:
            for i in claimed:
                results.release(dirs[i])
        bar.update(sum(i in todo_set for i in group))
    bar.close()
    if trained:
        print(f"Trained {_runs(len(trained))} in {time.perf_counter() - t0:.0f} s.")
    others = {d: holder for d, holder in others.items() if not results.is_done(d)}
    if others:
        print(f"Left {_runs(len(others))} to the processes that claimed them:")
        for d, holder in others.items():
            print(f"  {d} ({holder}; if that process is gone, delete {d / results.LOCK})")
    return SweepResult(dirs, trained, others)


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"
