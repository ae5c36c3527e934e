"""The Weights & Biases view of runs (runs.wandb_sink, sweeps.tracking), in offline mode only:
nothing here contacts a server.

What wandb wrote is read back from each offline run's transaction log (RUN_FOLDER/run-ID.wandb,
where wandb 0.31 keeps the config, history and summary; it writes no config.yaml or
wandb-summary.json offline): a 7-byte header (":W&B", 0xBEE1, version 0), then LevelDB-log
records in 32 KiB blocks, each a header (CRC-32 of its type byte and data, length, type) and a
piece of one wandb_internal_pb2.Record. Tables are JSON files beside it (files/media/table/).
"""

import dataclasses
import json
import struct
import sys
import zlib
from collections import defaultdict

import pytest
from test_results import config, finished

from pe_research import cli, results, runs
from pe_research.runs import wandb_sink
from pe_research.sweeps import tracking

BLOCK, FULL, LAST = 32768, 1, 4


def records(path):
    """The Record protos of a W&B transaction log, each piece's CRC checked."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert struct.unpack("<4sHB", data[:7]) == (b":W&B", 0xBEE1, 0)
    pos, pieces = 7, b""
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        crc, n, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if left < 7 or (n == 0 and kind == 0):  # the rest of a block is padding
            pos += left
            continue
        piece = data[pos + 7 : pos + 7 + n]
        assert crc == zlib.crc32(piece, zlib.crc32(bytes([kind]))), f"bad CRC at {pos} in {path}"
        pieces, pos = pieces + piece, pos + 7 + n
        if kind in (FULL, LAST):
            yield wandb_internal_pb2.Record.FromString(pieces)
            pieces = b""


@dataclasses.dataclass
class OfflineRun:
    """What an offline W&B run holds."""

    name: str
    id: str
    group: str
    tags: list[str]
    config: dict
    history: dict  # step -> {key: value}
    summary: dict
    exit_code: int | None
    tables: list  # the JSON of each logged table


def key(item):
    return ".".join(item.nested_key) if item.nested_key else item.key


def read_offline(folder):
    (log,) = folder.glob("run-*.wandb")
    run, config_, history, summary, exit_code = None, {}, defaultdict(dict), {}, None
    for record in records(log):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run = record.run
            config_.update({u.key: json.loads(u.value_json) for u in run.config.update})
        elif kind == "config":
            config_.update({u.key: json.loads(u.value_json) for u in record.config.update})
        elif kind == "history":
            step = record.history.step.num
            history[step].update({key(i): json.loads(i.value_json) for i in record.history.item})
        elif kind == "summary":
            summary.update({key(u): json.loads(u.value_json) for u in record.summary.update})
        elif kind == "exit":
            exit_code = record.exit.exit_code
    tables = [json.loads(p.read_text()) for p in sorted(folder.glob("files/media/table/*.json"))]
    return OfflineRun(run.display_name, run.run_id, run.run_group, list(run.tags), config_,
                      dict(history), summary, exit_code, tables)  # fmt: skip


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """W&B in offline mode, every folder of it under tmp_path. wandb reads its environment once
    per process (at its first run), so its state is torn down before and after."""
    import wandb

    for name in ("DIR", "CACHE_DIR", "CONFIG_DIR", "DATA_DIR"):
        (tmp_path / name.lower()).mkdir()
        monkeypatch.setenv(f"WANDB_{name}", str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_MODE", "offline")
    wandb.teardown()
    yield tmp_path / "dir" / "wandb"
    wandb.teardown()


@pytest.fixture
def sweep(tmp_path):
    """The run folder and results folder of a sweep `tiny` of three runs, one of them failed."""
    folder = tmp_path / "runs"
    finished(folder / "copy/rope/seed0", config("rope", base=500.0), {4: 1.0, 8: 0.25})
    finished(folder / "copy/nope/seed1", config("nope", seed=1), {4: 0.5, 8: 0.0})
    runs.prepare(failed := folder / "copy/t5/seed0", config("t5"))
    runs.mark_failed(failed, step=7, reason="loss became nan")
    tables = results.from_runs(runs.finished_runs(folder), experiment="tiny", scale="cpu")
    results.write(tmp_path / "tables", tables)
    return folder, tmp_path / "tables"


def test_rows_become_the_tensorboard_tags_by_step_and_the_evaluation_a_table_by_length():
    rows = [
        (runs.METRICS, {"step": 10, "loss": 0.5, "tokens_per_s": 900.0}),
        (runs.FIT, {"step": 10, "exact_match": 1.0, "fit": True, "check_s": 0.1}),
        (runs.METRICS, {"step": 5, "loss": 1.0}),
    ]
    assert wandb_sink.history(rows) == {
        5: {"train/loss": 1.0},
        10: {"train/loss": 0.5, "train/tokens_per_s": 900.0, "fit/exact_match": 1.0,
             "fit/fit": 1.0, "fit/check_s": 0.1},
    }  # fmt: skip
    assert list(wandb_sink.history(rows)) == [5, 10]  # W&B takes steps in order
    evals = [
        {"length": 8, "token_accuracy": 0.5, "exact_match": 0.25, "loss": 1.5, "seconds": 2.0},
        {"length": 4, "token_accuracy": 1.0, "exact_match": 1.0, "loss": 0.1, "seconds": 1.0},
    ]
    table = wandb_sink.eval_table(evals)
    assert table.columns == ["length", "token_accuracy", "exact_match", "loss"]
    assert table.data == [[4, 1.0, 1.0, 0.1], [8, 0.5, 0.25, 1.5]]
    run = "copy/rope/seed0-0123abcd"
    assert wandb_sink.wandb_id(run) == wandb_sink.wandb_id(run) != wandb_sink.wandb_id(run + "0")
    assert wandb_sink.wandb_id(run).isalnum()  # W&B ids take no '/'


@pytest.mark.slow  # about 6 s: W&B starts, then finishes, one run at a time
def test_upload_makes_one_run_per_run_with_its_name_group_tags_config_curves_and_table(
    offline, sweep, capsys
):
    run_folder, tables = sweep
    cli.main(["wandb", str(tables), "--project", "pe", "--offline"])
    out = capsys.readouterr().out
    assert out.startswith(f"Wrote 3 runs offline under {offline}") and "wandb sync " in out
    uploaded = {r.name: r for r in map(read_offline, offline.glob("offline-run-*"))}
    frame = results.read(tables).results.drop_duplicates("run").set_index("encoding.name")
    assert set(uploaded) == set(frame["run"])

    rope = uploaded[frame.loc["rope", "run"]]
    assert rope.id == wandb_sink.wandb_id(rope.name) and rope.group == "tiny"
    assert rope.tags == [frame.loc["rope", "task"], frame.loc["rope", "encoding"]]
    assert rope.config["encoding.base"] == 500.0 and rope.config["model.d_model"] == 16
    assert rope.config["train.fit_threshold"] == 0.95  # a default, recorded all the same
    assert not any(k.startswith("versions.") for k in rope.config)
    assert rope.history[5]["train/loss"] == 0.4 and rope.history[10]["train/loss"] == 0.2
    assert rope.history[5]["fit/exact_match"] == 1.0
    assert rope.summary["fit"] is True and rope.summary["fit_step"] == 5
    assert rope.tables == [
        {
            "columns": ["length", "token_accuracy", "exact_match", "loss"],
            "data": [[4, 1.0, 1.0, 0.0], [8, 0.25, 0.25, 0.75]],
        }
    ]
    assert rope.exit_code == 0

    nope = uploaded[frame.loc["nope", "run"]]
    assert nope.summary["fit"] is False and "fit_step" not in nope.summary
    t5 = uploaded[frame.loc["t5", "run"]]
    assert t5.summary["failed_step"] == 7 and t5.summary["failure"] == "loss became nan"
    assert t5.tables == [] and t5.exit_code == 1

    # Again, from the run directories: the same W&B ids (W&B resumes those runs), no group.
    again = tracking.upload(run_folder, "pe", offline=True)
    # (Read the ids from the files: W&B suffixes a folder's name when a run resumes within the
    # second it started, offline-run-TIME-ID-1.)
    resumed = [read_offline(d) for d in again.offline_dirs]
    assert {r.id for r in resumed} == {r.id for r in uploaded.values()}
    assert {r.group for r in resumed} == {""}


EXPERIMENT = """
from pe_research import encodings, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig

def runs():
    train = TrainConfig(steps=6, batch_size=8, train_length=4, warmup_steps=2, log_every=2,
                        stop_when_fit=True, fit_check_every=2)
    return [
        RunConfig(task=tasks.get("copy", alphabet=8), encoding=encodings.get("rope"),
                  model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
                  train=train, eval=EvalConfig(lengths=(4, 8), batch_size=8), seed=seed)
        for seed in (0, 1)
    ]
"""


@pytest.mark.slow  # a training run
def test_a_sweep_with_the_sink_logs_every_row_of_each_packed_run(offline, tmp_path):
    (experiment := tmp_path / "tiny.py").write_text(EXPERIMENT)
    out = tmp_path / "out"
    argv = ["sweep", str(experiment), "--out", str(out), "--no-progress", "--no-summarize"]
    cli.main([*argv, "--wandb", "pe"])
    logged = {r.name: r for r in map(read_offline, offline.glob("offline-run-*"))}
    folders = runs.find_runs([out])
    assert set(logged) == {"/".join(d.parts[-3:]) for d in folders} and len(folders) == 2
    for d in folders:
        cfg, run = runs.load_config(d), logged["/".join(d.parts[-3:])]
        assert run.id == wandb_sink.wandb_id(runs.run_id(cfg))  # an upload resumes this run
        assert run.group == "tiny" and run.config["seed"] == cfg.seed and run.exit_code == 0
        rows, checks = runs.read_jsonl(d / runs.METRICS), runs.read_jsonl(d / runs.FIT)
        assert [s for s in run.history if "train/loss" in run.history[s]] == [2, 4, 6]
        assert [run.history[r["step"]]["train/loss"] for r in rows] == [r["loss"] for r in rows]
        assert [run.history[c["step"]]["fit/exact_match"] for c in checks] == [
            c["exact_match"] for c in checks
        ]
        assert run.summary["train/loss"] == rows[-1]["loss"]
        evals = runs.read_jsonl(d / runs.EVAL)
        assert [row[0] for row in run.tables[0]["data"]] == [r["length"] for r in evals]
        assert run.summary["fit"] == runs.fit_verdict(cfg, evals)


def test_without_wandb_each_command_names_the_extra_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` raises ImportError
    with pytest.raises(ImportError, match=r'pip install "pe-research\[wandb\]"'):
        wandb_sink.LiveRuns("pe", [tmp_path], [config("rope")])  # train(..., wandb=...)
    out = tmp_path / "run"
    for argv in (
        ["wandb", str(tmp_path), "--project", "pe"],
        ["train", "--wandb", "pe", "--out", str(out), "copy", "rope"],
        ["sweep", "default", "--wandb", "pe", "--out", str(out)],
    ):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(argv)
        assert exit_info.value.code == 2
        assert 'pip install "pe-research[wandb]"' in capsys.readouterr().err
    assert not out.exists()  # nothing trained or written
