"""Run storage: run directories and the plain files in them, beside training.

    files.py       atomic writes, JSONL rows, write errors that say what to do
    provenance.py  which code and machine produced a run
    directory.py   a run directory's files and lifecycle: prepare, DONE, FAILED, config.json
    claims.py      one process trains a run at a time (LOCK): leases that expire
    rows.py        tidy rows of finished runs (pe_research.results makes the tables)
    events.py      the TensorBoard view of a run: its event file, rebuilt from the JSONL rows
    wandb_sink.py  the Weights & Biases view of a run (optional): live, or uploaded from tables

The names below are the public API of run storage (`from pe_research import runs`).
"""

from pe_research.runs.claims import (
    HEARTBEAT_S,
    LEASE_S,
    beat,
    check_folder,
    check_lease,
    claim_holder,
    holder_pid,
    is_claimed,
    release,
    try_claim,
)
from pe_research.runs.directory import (
    CHECKPOINTS,
    CONFIG,
    DONE,
    EVAL,
    FAILED,
    FIT,
    LOCK,
    METRICS,
    SELECT,
    check_same_config,
    clear_failure,
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
from pe_research.runs.provenance import code_version, source_revision, versions
from pe_research.runs.rows import (
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
)

__all__ = [
    "HEARTBEAT_S", "LEASE_S", "beat", "check_folder", "check_lease",
    "CHECKPOINTS", "CONFIG", "DONE", "EVAL", "FAILED", "FIT", "GENERALIZATION_MULTIPLES", "LOCK",
    "METRICS", "SELECT", "UNFIT", "EventLog", "WriteError", "check_same_config", "claim_holder",
    "clear_failure", "code_version", "eval_rows", "event_files", "failed_rows", "failure",
    "find_runs", "finished_at", "finished_runs", "first_fit_step", "fit_verdict", "flat_config",
    "holder_pid", "in_distribution_length", "is_claimed", "is_done", "is_failed",
    "is_failed_row", "is_finished", "is_unfit_series", "load_config", "mark_done", "mark_failed",
    "mark_unfit", "open_events", "prepare", "read_jsonl", "read_versions", "release", "run_id",
    "series_order", "source_revision", "try_claim", "versions", "write_all_events",
    "write_atomic", "write_error", "write_events", "write_jsonl",
]  # fmt: skip
