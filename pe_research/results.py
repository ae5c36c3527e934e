"""Results as tables: what a sweep keeps once its runs finish, and what every page is made from.

    results.parquet  one row per run x evaluation length: the run's id, experiment and scale,
                     its labels (task, encoding, seed, train_length, length), every metric, the
                     fit verdict, the code and machine that made it, when it finished, its whole
                     config as JSON (`config`) and as dotted columns ("model.d_model")
    curves.parquet   one row per logged training step (kind "train"), fit check ("fit") and
                     validation check ("select") of every run
    results.csv      the main columns of results.parquet, for a spreadsheet (6 digits)

`from pe_research import results; frame = results.load("docs/results/default")` reads a folder
holding these tables, a table file, or a folder of run directories, as a pandas DataFrame.
Pages and figures are pure functions of these tables (`pe-research report`), and a sweep
resumes from them: a run whose rows are in its folder's table is not trained again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pe_research.config import RunConfig
from pe_research.metrics import METRICS
from pe_research.runs import directory, rows
from pe_research.runs.files import read_jsonl, temp_file
from pe_research.runs.provenance import code_version

RESULTS, CURVES, CSV = "results.parquet", "curves.parquet", "results.csv"

LABELS = ("run", "experiment", "scale", "task", "encoding", "seed", "train_length", "length")
VERDICT = (
    "fit", "fit_step", "fit_exact_match", "fit_threshold", "fit_checked", "steps_cap",
    "failed_step", "failure",
)  # fmt: skip
PROVENANCE = ("code", "commit", "finished", "platform", "device", "data")
COLUMNS = (*LABELS, *METRICS, *VERDICT, *PROVENANCE)
"""The first columns of results.parquet, in order; then `chance_token_accuracy`, `config` and
the config's dotted columns. `fit`: exact match at the training length reached
train.fit_threshold (empty for tasks without exact match); `fit_step`: the first fit check that
found it; `failed_step`/`failure`: a run whose loss diverged, whose metrics are empty; `code`:
the code version (package, git commit, jax and flax: runs.code_version); `finished`: UTC."""
CSV_COLUMNS = (*LABELS, *METRICS, "fit", "fit_step", "failed_step", "commit", "finished")
CURVE_LABELS = ("run", "experiment", "scale", "task", "encoding", "seed", "kind", "step")

_INTEGERS = ("seed", "train_length", "length", "fit_step", "failed_step", "steps_cap", "step")
_FLOATS = (*METRICS, "fit_exact_match", "fit_threshold", "chance_token_accuracy")
_BOOLEANS = ("fit", "fit_checked")


@dataclasses.dataclass(frozen=True)
class Tables:
    """A sweep's two tables."""

    results: pd.DataFrame
    curves: pd.DataFrame

    @property
    def run_ids(self) -> set[str]:
        return set(self.results["run"])

    def only(self, run_ids: Iterable[str]) -> Tables:
        """The rows of these runs alone."""
        keep = set(run_ids)
        return Tables(
            self.results[self.results["run"].isin(keep)].reset_index(drop=True),
            self.curves[self.curves["run"].isin(keep)].reset_index(drop=True),
        )


def empty() -> Tables:
    return Tables(pd.DataFrame(columns=list(COLUMNS)), pd.DataFrame(columns=list(CURVE_LABELS)))


# -- from run directories ---------------------------------------------------------------------


def flat_config(cfg: RunConfig) -> dict[str, Any]:
    """Every config field, defaults included, as dotted keys ("encoding.base")."""
    return directory.flat_config(cfg.to_dict())


def _run_rows(
    run_dir: Path, labels: dict[str, Any], variant: Callable[[RunConfig], str] | None
) -> tuple[list[dict], list[dict]]:
    """One run's result rows and curve rows."""
    cfg = directory.load_config(run_dir)
    versions = directory.read_versions(run_dir)
    finished = directory.finished_at(run_dir) if directory.is_done(run_dir) else None
    if finished is None and (record := directory.failure(run_dir)) is not None:
        finished = record.get("time")
    common = {
        **labels,
        "run": directory.run_id(cfg),
        "code": code_version(versions),
        "commit": versions.get("git_commit"),
        "finished": finished
        if isinstance(finished, str) or finished is None
        else finished.isoformat(timespec="seconds"),
        "platform": versions.get("platform"),
        "device": versions.get("device"),
    }
    source = rows.eval_rows if directory.is_done(run_dir) else rows.failed_rows
    config = json.dumps(cfg.to_dict(), sort_keys=True)
    flat = {k: _plain(v) for k, v in flat_config(cfg).items()}
    result = []
    for row in source([run_dir]):
        chance = (row.pop("chance", None) or {}).get("token_accuracy")
        row = {k: v for k, v in row.items() if k not in ("run", "code", "trained_past_fit")}
        if variant is not None:  # the experiment's variants of one encoding are series apart
            row["encoding"] = f"{row['encoding']} | {variant(cfg)}"
        result.append({**common, **row, "chance_token_accuracy": chance, "config": config, **flat})
    curves = []
    head = {k: common[k] for k in ("run", "experiment", "scale")}
    head |= {"task": result[0]["task"], "encoding": result[0]["encoding"], "seed": cfg.seed}
    for kind, name in (("train", directory.METRICS), ("fit", directory.FIT),
                       ("select", directory.SELECT)):  # fmt: skip
        path = Path(run_dir) / name
        if path.exists():
            curves += [{**head, "kind": kind, **r} for r in read_jsonl(path)]
    return result, curves


def _plain(value: Any) -> Any:
    """A config value as a table cell: scalars as they are, lists and dicts as JSON text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, sort_keys=True)


def from_runs(
    run_dirs: Iterable[Path],
    *,
    experiment: str | None = None,
    scale: str | None = None,
    strict: bool = False,
    variant: Callable[[RunConfig], str] | None = None,
) -> Tables:
    """The tables of the finished (done or failed) runs among `run_dirs`; unfinished ones are
    left out. A run whose files cannot be read is left out with a warning naming the file, or,
    if `strict`, fails with that error. `variant(cfg)` (an experiment's) names what else than
    its encoding tells a run apart: its series is "ENCODING | VARIANT"."""
    result, curves = [], []
    labels = {"experiment": experiment, "scale": scale}
    for run_dir in map(Path, run_dirs):
        if not directory.is_finished(run_dir):
            continue
        try:
            run_result, run_curves = _run_rows(run_dir, labels, variant)
        except (ValueError, FileNotFoundError) as e:
            if strict:
                raise
            warnings.warn(f"left out {run_dir}: {e}", stacklevel=2)
            continue
        result += run_result
        curves += run_curves
    if not result:
        return empty()
    return Tables(_frame(result, COLUMNS), _frame(curves, CURVE_LABELS))


def _frame(records: list[dict[str, Any]], first: Sequence[str]) -> pd.DataFrame:
    """A DataFrame of `records`, columns `first` then the rest (labels, then sorted dotted
    config columns), each column a type parquet keeps (nullable ints and booleans, text)."""
    frame = pd.DataFrame.from_records(records)
    rest = [c for c in frame.columns if c not in first]
    columns = [*first, *[c for c in rest if "." not in c], *sorted(c for c in rest if "." in c)]
    frame = frame.reindex(columns=columns)
    for name in frame.columns:
        frame[name] = _typed(frame[name], name)
    return frame


def _typed(column: pd.Series, name: str) -> pd.Series:
    if name in _FLOATS:
        return column.astype("Float64")
    if name in _BOOLEANS:
        return column.astype("boolean")
    values = column.dropna()
    kinds = {type(v) for v in values}
    if name in _INTEGERS or (kinds and kinds <= {int}):
        return column.astype("Int64")
    if kinds and kinds <= {bool}:
        return column.astype("boolean")
    if kinds and kinds <= {int, float}:
        return column.astype("Float64")
    if kinds and kinds <= {str}:
        return column.astype("string")
    if not kinds:  # empty everywhere
        return column.astype("string") if column.dtype == object else column
    if column.dtype == object:  # mixed: one type a table can hold
        return column.map(lambda v: None if _missing(v) else json.dumps(v)).astype("string")
    return column


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value) or value is pd.NA


# -- files ------------------------------------------------------------------------------------


def write(folder: Path, tables: Tables) -> list[Path]:
    """FOLDER/results.parquet, curves.parquet and results.csv, each written whole (a crash
    leaves the old file or the new one, never half of one)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / RESULTS, folder / CURVES, folder / CSV]
    _atomic(paths[0], lambda p: tables.results.to_parquet(p, index=False))
    _atomic(paths[1], lambda p: tables.curves.to_parquet(p, index=False))
    csv = tables.results.reindex(columns=list(CSV_COLUMNS))
    # Six significant digits in the spreadsheet copy; results.parquet keeps every bit.
    _atomic(
        paths[2], lambda p: csv.to_csv(p, index=False, lineterminator="\n", float_format="%.6g")
    )
    return paths


def _atomic(path: Path, write_to: Any) -> None:
    fd, tmp = temp_file(path.parent, f".{path.name}.")
    os.close(fd)
    try:
        write_to(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


WRITE_LOCK = ".tables.lock"
"""FOLDER/.tables.lock: held (exclusively created) by the process writing the folder's tables."""


@contextlib.contextmanager
def writing(folder: Path, wait_s: float = 120.0) -> Iterator[None]:
    """Hold the folder's write lock while reading, merging and writing its tables, so that two
    processes ending at once do not each write a table without the other's runs. A lock older
    than `wait_s` was left by a process that died mid-write, and is taken."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / WRITE_LOCK
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            break
        except FileExistsError:
            try:
                if time.time() - lock.stat().st_mtime > wait_s:
                    lock.unlink(missing_ok=True)
                    continue
            except FileNotFoundError:
                continue
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{lock} has been held for {wait_s:g} s: another process is writing the "
                    "tables, or died doing it; delete the file if no sweep writes there."
                ) from None
            time.sleep(0.1)
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def has_tables(folder: Path) -> bool:
    return (Path(folder) / RESULTS).exists()


def read(folder: Path) -> Tables:
    """The tables in FOLDER (curves empty if curves.parquet is missing)."""
    folder = Path(folder)
    if not has_tables(folder):
        raise FileNotFoundError(
            f"No {RESULTS} in {folder}: give a folder a sweep wrote its tables to (`pe-research "
            "sweep EXPERIMENT --results FOLDER`), such as docs/results/default."
        )
    results = pd.read_parquet(folder / RESULTS)
    curves_path = folder / CURVES
    curves = pd.read_parquet(curves_path) if curves_path.exists() else empty().curves
    return Tables(results, curves)


def load(path: Path | str, strict: bool = False) -> pd.DataFrame:
    """Results as one DataFrame (one row per run x evaluation length), from a folder holding
    results.parquet, from that file, or from the finished run directories at or below a folder
    (which warns and gives an empty frame with COLUMNS if there are none; a run whose files
    cannot be read is left out with a warning, or fails the call if `strict`)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist.")
    if path.is_file():
        return pd.read_parquet(path)
    if has_tables(path):
        return read(path).results
    tables = from_runs(directory.finished_runs(path), strict=strict)
    if tables.results.empty:
        warnings.warn(
            f"no finished runs (directories with config.json and DONE or FAILED) under {path}, "
            f"and no {RESULTS}: the frame is empty.",
            stacklevel=2,
        )
    return tables.results


def merge(old: Tables, new: Tables) -> Tables:
    """`old`'s rows of the runs `new` does not have, then `new`'s."""
    kept = old.only(old.run_ids - new.run_ids)
    frames = [f for f in (kept.results, new.results) if not f.empty]
    curves = [f for f in (kept.curves, new.curves) if not f.empty]
    if not frames:
        return empty()
    results = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    curves_frame = (
        pd.concat(curves, ignore_index=True)
        if len(curves) > 1
        else (curves[0] if curves else empty().curves)
    )
    return Tables(_retype(results, COLUMNS), _retype(curves_frame, CURVE_LABELS))


def _retype(frame: pd.DataFrame, first: Sequence[str]) -> pd.DataFrame:
    records = frame.astype(object).where(frame.notna(), None).to_dict("records")
    return _frame(records, first)


# -- rows for the page code -------------------------------------------------------------------


def as_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a results table as dicts (its labels, metrics and verdict; not the config's
    columns), missing cells as None, with `chance` as summaries and plots read it."""
    frame = frame[[c for c in frame.columns if "." not in c and c != "config"]]
    out = []
    for row in frame.astype(object).where(frame.notna(), None).to_dict("records"):
        chance = row.get("chance_token_accuracy")
        row["chance"] = {"token_accuracy": chance} if chance is not None else None
        out.append(row)
    return out


def configs(frame: pd.DataFrame) -> dict[str, RunConfig]:
    """run id -> the RunConfig its rows record."""
    firsts = frame.drop_duplicates("run")
    return {
        run: RunConfig.from_dict(json.loads(text))
        for run, text in zip(firsts["run"], firsts["config"], strict=True)
    }


def code_versions(frame: pd.DataFrame) -> list[str]:
    """The code versions of a table's runs, most runs first."""
    per_run = frame.drop_duplicates("run")["code"]
    return list(per_run.value_counts().index)


def commits(frame: pd.DataFrame) -> list[tuple[str, int]]:
    """(git commit, runs) of a table's runs, most runs first, then by commit ("unknown" for runs
    made outside a git checkout)."""
    per_run = frame.drop_duplicates("run")["commit"].fillna("unknown")
    return sorted(per_run.value_counts().items(), key=lambda item: (-item[1], item[0]))
