"""Run directories and the rows in them.

    RUN_DIR/config.json    the RunConfig (task and encoding recorded by name) plus versions
    RUN_DIR/metrics.jsonl  one JSON object per logged training step
    RUN_DIR/eval.jsonl     one JSON object per evaluation length
    RUN_DIR/DONE           written last: a run without it is unfinished and is never read as done

Whole files are written to a temporary name and renamed, so a crash never leaves half a file;
the append-only metrics file is the exception, and readers skip a torn last line.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pe_research.config import RunConfig, task_label

CONFIG, METRICS, EVAL, DONE = "config.json", "metrics.jsonl", "eval.jsonl", "DONE"


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    write_atomic(path, "".join(json.dumps(row) + "\n" for row in rows))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a torn last line (a crash mid-append) is skipped with a warning."""
    rows = []
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                msg = f"{path}: skipped a torn last line (interrupted write)."
                warnings.warn(msg, stacklevel=2)
                continue
            raise ValueError(f"{path}:{i + 1} is not valid JSON; the file is corrupt.") from None
    return rows


def versions() -> dict[str, str]:
    import flax
    import jax
    import optax

    from pe_research import __version__

    return {
        "pe_research": __version__,
        "jax": jax.__version__,
        "flax": flax.__version__,
        "optax": optax.__version__,
        "python": platform.python_version(),
        "device": jax.devices()[0].device_kind,
    }


def is_done(run_dir: Path) -> bool:
    return (Path(run_dir) / DONE).exists()


def prepare(run_dir: Path, cfg: RunConfig, *, overwrite: bool = False) -> Path:
    """Create (or reset) a run directory and write its config.json.

    A directory holding a finished run is refused unless `overwrite`; an unfinished one (no DONE)
    is cleared, so two runs' rows never share a file.
    """
    run_dir = Path(run_dir)
    if is_done(run_dir) and not overwrite:
        raise FileExistsError(
            f"{run_dir} already holds a finished run; pass --overwrite to replace it or choose "
            "another output directory."
        )
    if run_dir.exists():
        for name in (CONFIG, METRICS, EVAL, DONE):
            (run_dir / name).unlink(missing_ok=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(
        run_dir / CONFIG,
        json.dumps({**cfg.to_dict(), "versions": versions()}, indent=2) + "\n",
    )
    return run_dir


def mark_done(run_dir: Path) -> None:
    write_atomic(Path(run_dir) / DONE, "")


def load_config(run_dir: Path) -> RunConfig:
    path = Path(run_dir) / CONFIG
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: is {run_dir} a run directory?")
    try:
        d = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON ({e}); rerun the training.") from None
    return RunConfig.from_dict(d)


def find_runs(paths: Iterable[Path | str]) -> list[Path]:
    """Finished run directories at or below each path, sorted; ValueError if there are none."""
    found: set[Path] = set()
    for p in map(Path, paths):
        if not p.exists():
            raise FileNotFoundError(f"{p} does not exist.")
        found.update(d.parent for d in p.rglob(DONE))
        if is_done(p):
            found.add(p)
    if not found:
        raise ValueError(
            f"No finished runs (directories with a {DONE} file) under {', '.join(map(str, paths))}."
        )
    return sorted(found)


def eval_rows(run_dirs: Iterable[Path]) -> Iterator[dict[str, Any]]:
    """Tidy rows: one per run x evaluation length, labelled with the run's task and encoding."""
    for run_dir in run_dirs:
        cfg = load_config(run_dir)
        for row in read_jsonl(Path(run_dir) / EVAL):
            yield {
                "run": str(run_dir),
                "task": task_label(cfg.task),
                "encoding": cfg.encoding.label(),
                "seed": cfg.seed,
                "train_length": cfg.train.train_length,
                **row,
            }
