"""The Weights & Biases view of runs, optional (`pip install "pe-research[wandb]"`): one W&B run
per run, logged while it trains (`LiveRuns`: `pe-research train/sweep --wandb PROJECT`) or
uploaded once it finished (pe_research.sweeps.tracking: `pe-research wandb`).

A W&B run is named by its run id (runs.run_id: TASK/ENCODING/seedN-HASH) and its W&B id is a
hash of that (`wandb_id`), so a run logged live and uploaded later, or uploaded twice, is one
W&B run (resume="allow"), and rows at steps W&B already holds are not sent again. Tags: the
run's task and encoding; config: its whole config.json (less versions) as dotted keys
("encoding.base"); history: the TensorBoard view's tags (runs.events.scalars: `train/*` and
`fit/*` by step); `eval`: a table of one row per evaluation length; summary: `fit` and
`fit_step` as the results tables have them, and `failed_step` and `failure` of a failed run.

Like the TensorBoard event file, this is a view: the JSONL files and the results tables stay the
source of truth. wandb is imported only when a run is started.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pe_research.config import RunConfig, series_label, task_label
from pe_research.metrics import METRICS as METRIC_NAMES
from pe_research.runs.directory import failure, flat_config, run_id
from pe_research.runs.events import scalars
from pe_research.runs.rows import first_fit_step, fit_verdict

INSTALL = 'pip install "pe-research[wandb]"'
MIN_VERSION = "0.19.10"
"""The first wandb with several live runs in one process (reinit="create_new"): packed seeds."""
EVAL_TABLE = "eval"
"""History key of the evaluation table."""


def import_wandb() -> Any:
    """The wandb module; ImportError saying what to install if it is missing or too old."""
    try:
        import wandb
    except ImportError as e:
        raise ImportError(f"Weights & Biases logging needs the wandb package: {INSTALL}") from e
    from packaging.version import Version

    if Version(wandb.__version__) < Version(MIN_VERSION):
        raise ImportError(
            f"Weights & Biases logging needs wandb>={MIN_VERSION} (several runs in one process), "
            f"found {wandb.__version__}: {INSTALL} --upgrade"
        )
    return wandb


def wandb_id(run: str) -> str:
    """The W&B id of a run id: stable, so that a second upload resumes the same W&B run (W&B
    ids take no '/')."""
    return hashlib.sha256(run.encode()).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class Project:
    """Where runs go: a W&B project, its entity (None: your default entity), the runs' group
    (a sweep's experiment), and the mode (None: W&B's own, as WANDB_MODE or `wandb offline`
    set it)."""

    name: str
    entity: str | None = None
    group: str | None = None
    mode: str | None = None


def start(
    project: Project, run: str, config: dict[str, Any], tags: Sequence[str], *, upload: bool
) -> Any:
    """The W&B run of run id `run`, created or resumed. `upload`: a finished run sent from
    files (no system metrics or host metadata of the machine sending it, and no messages)."""
    wandb = import_wandb()
    config = {k: v for k, v in config.items() if k != "versions"}
    # An upload prints its own summary, and its machine is not the one that trained.
    settings = {"x_disable_stats": True, "x_disable_meta": True, "silent": True} if upload else {}
    return wandb.init(
        project=project.name,
        entity=project.entity,
        group=project.group,
        mode=project.mode,
        name=run,
        id=wandb_id(run),
        tags=[t[:64] for t in tags if t],  # W&B's limit on a tag
        config=flat_config(config),
        resume="allow",
        reinit="create_new",  # packed seeds: one live W&B run each, in one process
        # console="off": the rows are logged, not the terminal (shared by packed runs)
        settings=wandb.Settings(console="off", quiet=True, **settings),
    )


def history(rows: Iterable[tuple[str, dict[str, Any]]]) -> dict[int, dict[str, float]]:
    """{step: {tag: value}} of (file name, row) pairs of metrics.jsonl and fit.jsonl rows,
    merged by step (a W&B run has one step axis) and sorted by it."""
    out: dict[int, dict[str, float]] = {}
    for name, row in rows:
        step, values = scalars(name, row)
        out.setdefault(step, {}).update(values)
    return dict(sorted(out.items()))


def eval_table(rows: Iterable[dict[str, Any]]) -> Any:
    """A wandb.Table of evaluation rows: the length, then each metric the rows hold."""
    rows = sorted(rows, key=lambda r: r["length"])
    names = [m for m in METRIC_NAMES if any(r.get(m) is not None for r in rows)]
    data = [[int(r["length"]), *(r.get(m) for m in names)] for r in rows]
    return import_wandb().Table(columns=["length", *names], data=data)


class LiveRuns:
    """One live W&B run per run of a packed program (training.RunLog sends it every row it
    writes); `finish` ends them all."""

    def __init__(self, project: Project | str, run_dirs: Sequence[Path], cfgs: Sequence[RunConfig]):
        project = Project(project) if isinstance(project, str) else project
        self.run_dirs, self.cfgs = [Path(d) for d in run_dirs], list(cfgs)
        self._runs: list[Any] = []
        try:
            for cfg in self.cfgs:
                tags = [task_label(cfg.task), series_label(cfg)]
                self._runs.append(start(project, run_id(cfg), cfg.to_dict(), tags, upload=False))
        except BaseException:
            self.finish(exit_code=1)
            raise
        # A resumed W&B run holds the steps before this: a run resumed from its checkpoint
        # repeats them (bit for bit on CPU), and W&B would drop them with a warning each.
        self._first = [run.starting_step for run in self._runs]

    def add(self, r: int, name: str, row: dict[str, Any]) -> None:
        """Log one row of run r's metrics.jsonl or fit.jsonl (`name`) at its step."""
        for step, values in history([(name, row)]).items():
            if step >= self._first[r]:
                self._runs[r].log(values, step=step)

    def add_eval(self, r: int, rows: list[dict[str, Any]]) -> None:
        """Log run r's evaluation (its eval.jsonl rows) as a table, and its fit verdict."""
        run, cfg = self._runs[r], self.cfgs[r]
        run.log({EVAL_TABLE: eval_table(rows)})
        verdict = {"fit": fit_verdict(cfg, rows), "fit_step": first_fit_step(self.run_dirs[r], cfg)}
        run.summary.update({k: v for k, v in verdict.items() if v is not None})

    def finish(self, exit_code: int = 0) -> None:
        """End every run: a failed one (runs.mark_failed) with its step and reason in its
        summary and exit code 1, the others with `exit_code` (1: training was interrupted)."""
        for d, run in zip(self.run_dirs, self._runs, strict=False):
            record = failure(d)
            if record is not None:
                run.summary.update({"failed_step": record["step"], "failure": record["reason"]})
            run.finish(exit_code=1 if record is not None else exit_code)
        self._runs = []
