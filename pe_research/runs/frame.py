"""Every run under a folder as one pandas DataFrame (`pe_research.results.load`).

One row per run x evaluation length: the columns of results.csv (labels, every metric, the fit
verdict), the rest of each eval.jsonl row, and the run's whole config flattened into dotted
columns ("model.d_model", "encoding.base", "train.steps"). pandas is an optional dependency:
`pip install "pe-research[analysis]"`.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pe_research.config import RunConfig
from pe_research.runs.directory import finished_runs, flat_config, is_done, load_config
from pe_research.runs.rows import CSV_COLUMNS, eval_rows, failed_rows

if TYPE_CHECKING:
    import pandas

FRAME_COLUMNS = (*CSV_COLUMNS[:-1], "fit_exact_match", "fit_threshold", "failure", "run")
"""The columns every frame starts with (an empty one has exactly these)."""


def full_config(cfg: RunConfig) -> dict[str, Any]:
    """`cfg.to_dict()` with every model and training field, defaults included, flattened."""
    d = {**cfg.to_dict(), "model": dataclasses.asdict(cfg.model)}
    d["train"] = dataclasses.asdict(cfg.train)
    return {k: tuple(v) if isinstance(v, list) else v for k, v in flat_config(d).items()}


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    rows = list(eval_rows([run_dir]) if is_done(run_dir) else failed_rows([run_dir]))
    config = full_config(load_config(run_dir))
    return [{**{k: v for k, v in r.items() if k != "chance"}, **config} for r in rows]


def load_frame(path: Path | str) -> pandas.DataFrame:
    """Every finished or failed run at or below `path`, one row per run x evaluation length.

    A folder with no finished run gives an empty frame (FRAME_COLUMNS) and a warning; a run whose
    files cannot be read (a damaged config.json or a damaged line inside eval.jsonl) is left out
    with a warning that names the file; a torn last line is skipped as everywhere (read_jsonl).
    Unfinished runs are left out.
    """
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(
            'pe_research.results.load needs pandas: pip install "pe-research[analysis]" (or '
            "pip install pandas)."
        ) from None
    rows = []
    for run_dir in finished_runs(path):
        try:
            rows.extend(_rows(run_dir))
        except (ValueError, FileNotFoundError) as e:
            warnings.warn(f"left out {run_dir}: {e}", stacklevel=2)
    if not rows:
        warnings.warn(
            f"no finished runs (directories with config.json and DONE or FAILED) under {path}: "
            "the frame is empty.",
            stacklevel=2,
        )
        return pd.DataFrame(columns=list(FRAME_COLUMNS))
    frame = pd.DataFrame(rows)
    rest = [c for c in frame.columns if c not in FRAME_COLUMNS]
    labels = [c for c in rest if "." not in c]  # eval.jsonl's other fields, then the config
    columns = [*FRAME_COLUMNS, *labels, *sorted(set(rest) - set(labels))]
    return frame.reindex(columns=columns)  # FRAME_COLUMNS always, empty where no run has it
