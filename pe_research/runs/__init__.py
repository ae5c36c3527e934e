"""Run storage: run directories and the plain files in them, beside training.

    files.py       atomic writes, JSONL rows, write errors that say what to do
    provenance.py  which code and machine produced a run
    directory.py   a run directory's files and lifecycle: prepare, DONE, FAILED, config.json
    claims.py      one process trains a run at a time (LOCK)
    rows.py        tidy rows of finished runs, results.csv
    events.py      the TensorBoard view of a run: its event file, rebuilt from the JSONL rows
    frame.py       every run under a folder as a pandas DataFrame (pe_research.results.load)

The names below are the public API of run storage (`from pe_research import runs`).
"""

from pe_research.runs.claims import claim_holder, holder_pid, is_claimed, release, try_claim
from pe_research.runs.directory import (
    CHECKPOINTS,
    CONFIG,
    DONE,
    EVAL,
    FAILED,
    FIT,
    LOCK,
    METRICS,
    RECORDS,
    check_same_config,
    clear_failure,
    copy_records,
    failure,
    find_runs,
    finished_at,
    finished_runs,
    flat_config,
    is_done,
    is_failed,
    is_finished,
    load_config,
    mark_done,
    mark_failed,
    prepare,
    read_versions,
    run_id,
)
from pe_research.runs.events import (
    EventLog,
    event_files,
    open_events,
    write_all_events,
    write_events,
)
from pe_research.runs.files import WriteError, read_jsonl, write_atomic, write_error, write_jsonl
from pe_research.runs.frame import FRAME_COLUMNS, full_config, load_frame
from pe_research.runs.provenance import code_version, source_revision, versions
from pe_research.runs.rows import (
    CSV_COLUMNS,
    GENERALIZATION_MULTIPLES,
    UNFIT,
    eval_rows,
    failed_rows,
    first_fit_step,
    fit_verdict,
    in_distribution_length,
    is_failed_row,
    is_unfit_series,
    mark_unfit,
    series_order,
    trained_past_fit,
    write_csv,
)

__all__ = [
    "CHECKPOINTS", "CONFIG", "CSV_COLUMNS", "DONE", "EVAL", "FAILED", "GENERALIZATION_MULTIPLES",
    "FIT", "LOCK", "METRICS", "RECORDS", "UNFIT", "fit_verdict", "first_fit_step",
    "is_unfit_series", "mark_unfit", "series_order", "trained_past_fit", "in_distribution_length",
    "is_failed_row",
    "WriteError", "check_same_config", "claim_holder", "clear_failure", "code_version",
    "copy_records", "finished_at",
    "eval_rows", "failed_rows", "failure", "find_runs", "holder_pid", "is_claimed", "is_done",
    "is_failed", "is_finished",
    "load_config", "mark_done", "mark_failed", "prepare", "read_jsonl", "read_versions",
    "release", "run_id", "source_revision", "try_claim", "versions", "write_atomic", "write_csv",
    "write_error", "write_jsonl", "EventLog", "event_files", "open_events", "write_all_events",
    "write_events", "FRAME_COLUMNS", "finished_runs", "flat_config", "full_config", "load_frame",
]  # fmt: skip
