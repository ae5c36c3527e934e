"""Upload finished runs to Weights & Biases (`pe-research wandb PATH --project P`): from a results
folder (results.parquet, curves.parquet) or from the finished run directories under a folder.

Each run becomes one W&B run as runs.wandb_sink lays it out (named by its run id, grouped by its
experiment, tagged with its task and encoding, its config, its curves by step, its evaluation
table, its fit verdict). Its W&B id is a hash of its run id, so uploading again, or uploading a
run that was logged live (`--wandb`), resumes the same W&B run instead of making another.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pandas as pd

from pe_research import results, runs
from pe_research.runs import wandb_sink

_KIND_FILE = {"train": runs.METRICS, "fit": runs.FIT}
"""curves.parquet's kind -> the JSONL file its rows come from (the TensorBoard tags follow)."""
_CURVE_LABELS = ("experiment", "scale", "task", "encoding", "seed")
"""Labels of a curve row that are not numbers of its step."""


@dataclasses.dataclass(frozen=True)
class Uploaded:
    """What an upload did: the W&B runs' ids, and where they went (offline: their folders)."""

    count: int
    urls: list[str]
    offline_dirs: list[Path]

    def text(self) -> str:
        """What to tell the user: how many, where, and (offline) how to send them."""
        runs_ = f"{self.count} run" + ("" if self.count == 1 else "s")
        if not self.offline_dirs:
            where = self.urls[0].rsplit("/runs/", 1)[0] if self.urls else "W&B"
            return f"Uploaded {runs_} to {where}"
        folder = self.offline_dirs[0].parent
        return (
            f"Wrote {runs_} offline under {folder}; send them to W&B (after `wandb login`) with:\n"
            f"  wandb sync {' '.join(str(d) for d in self.offline_dirs)}"
        )


def read_tables(path: Path) -> results.Tables:
    """The tables of a results folder, else of the finished runs under a folder of run
    directories; ValueError if there are none."""
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"{path} is not a folder: give a results folder or a folder of runs.")
    if results.has_tables(path):
        return results.read(path)
    tables = results.from_runs(runs.finished_runs(path))
    if tables.results.empty:
        raise ValueError(
            f"No {results.RESULTS} in {path} and no finished run directories under it: give a "
            "results folder (such as docs/results/default) or a sweep's run folder."
        )
    return tables


def upload(
    path: Path, project: str, *, entity: str | None = None, offline: bool = False
) -> Uploaded:
    """Upload every run of the tables at `path` (`read_tables`) to W&B project `project`, or,
    `offline`, write them to local W&B folders for `wandb sync`."""
    wandb_sink.import_wandb()  # first: a missing package is the first thing to fix
    tables = read_tables(path)
    mode = "offline" if offline else None
    curves: dict[str, list[dict[str, Any]]] = {}
    for r in _records(tables.curves, drop=_CURVE_LABELS):
        curves.setdefault(r.pop("run"), []).append(r)
    urls, offline_dirs = [], []
    for run, frame in tables.results.groupby("run", sort=True):
        rows = _records(frame)
        first = rows[0]
        group = first.get("experiment")
        where = wandb_sink.Project(project, entity=entity, group=group, mode=mode)
        tags = [first.get("task"), first.get("encoding")]
        w = wandb_sink.start(where, run, json.loads(first["config"]), tags, upload=True)
        try:
            steps = curves.get(run, [])
            logged = wandb_sink.history((_KIND_FILE[r["kind"]], r) for r in steps)
            for step, values in logged.items():
                if step >= w.starting_step:  # not again what a resumed W&B run holds
                    w.log(values, step=step)
            if first.get("failed_step") is None:
                w.log({wandb_sink.EVAL_TABLE: wandb_sink.eval_table(rows)})
            verdict = ("fit", "fit_step", "failed_step", "failure")
            w.summary.update({k: first.get(k) for k in verdict if first.get(k) is not None})
        finally:
            w.finish(exit_code=0 if first.get("failed_step") is None else 1)
        if offline:
            offline_dirs.append(Path(w.settings.sync_dir))
        elif w.url:
            urls.append(w.url)
    return Uploaded(tables.results["run"].nunique(), urls, offline_dirs)


def _records(frame: pd.DataFrame, drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The rows of a table as dicts of plain Python values, without their missing cells, the
    config's dotted columns and the columns `drop`."""
    frame = frame[[c for c in frame.columns if "." not in c and c not in drop]]
    return [
        {k: v.item() if hasattr(v, "item") else v for k, v in row.items() if v is not None}
        for row in frame.astype(object).where(frame.notna(), None).to_dict("records")
    ]
