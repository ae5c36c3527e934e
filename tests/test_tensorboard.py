"""TensorBoard event files: a view of metrics.jsonl, fit.jsonl and eval.jsonl that a kill and
resume leaves without duplicate or out-of-order steps, rebuilt by `pe-research tensorboard`.

The files are read back here by parsing the TFRecord framing (with an independent CRC-32C) and
decoding each record as TensorBoard's Event proto.
"""

import shutil
import struct
import subprocess
import sys
from collections import defaultdict

import numpy as np
import pytest
from tensorboardX.proto import event_pb2
from test_checkpoint import kill_when

from pe_research import cli, runs
from pe_research.training import checkpoints

FLAGS = [
    "--no-progress",
    "--checkpoint-every", "20",
    "--model.num-layers", "1",
    "--model.d-model", "16",
    "--model.num-heads", "2",
    "--model.mlp-dim", "32",
    "--train.steps", "80",
    "--train.batch-size", "4",
    "--train.train-length", "4",
    "--train.log-every", "10",
    "--train.stop-when-fit",
    "--train.fit-check-every", "20",
    "--train.fit-threshold", "1.0",  # (not reached by this tiny model) a fit row every 20
    "--eval.lengths", "4", "8",
    "--eval.batch-size", "4",
]  # fmt: skip


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), bit by bit, as the TFRecord format specifies it."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_events(run_dir):
    """{tag: [(step, value)]} of the run's one event file, in file order; a torn last record (a
    kill mid-write) ends the file, as it does for TensorBoard."""
    (path,) = runs.event_files(run_dir)
    data, pos, out = path.read_bytes(), 0, defaultdict(list)
    while pos + 12 <= len(data):
        header = data[pos : pos + 8]
        (n,) = struct.unpack("<Q", header)
        if pos + 16 + n > len(data):
            break
        assert struct.unpack("<I", data[pos + 8 : pos + 12])[0] == masked(crc32c(header))
        payload = data[pos + 12 : pos + 12 + n]
        assert struct.unpack("<I", data[pos + 12 + n : pos + 16 + n])[0] == masked(crc32c(payload))
        event = event_pb2.Event.FromString(payload)
        for v in event.summary.value:
            value = v.tensor.string_val[0].decode() if v.HasField("tensor") else v.simple_value
            out[v.tag].append((event.step, value))
        pos += 16 + n
    return dict(out)


def assert_events_mirror_files(run_dir):
    events = read_events(run_dir)
    for name, prefix, step in [
        (runs.METRICS, "train", "step"),
        (runs.FIT, "fit", "step"),
        (runs.EVAL, "eval", "length"),
    ]:
        rows = runs.read_jsonl(run_dir / name)
        assert rows, name
        keys = {"loss", "token_accuracy", "exact_match"} if name == runs.EVAL else set(rows[0])
        for key in keys - {step}:
            steps, values = zip(*events[f"{prefix}/{key}"], strict=True)
            assert list(steps) == [r[step] for r in rows if key in r], (name, key)
            want = [np.float32(r[key]) for r in rows if key in r]
            np.testing.assert_array_equal(np.float32(values), want, err_msg=f"{prefix}/{key}")
    assert all(np.all(np.diff([s for s, _ in series]) > 0) for series in events.values())
    assert '"encoding"' in events["config/text_summary"][0][1]
    assert not list(run_dir.glob(".events.*"))  # no temporary file left behind
    return events


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """A run killed after its checkpoint of step 40 and resumed; (run_dir, events read at the
    kill, metrics.jsonl rows at the kill)."""
    run = tmp_path_factory.mktemp("tb") / "sweep" / "copy" / "rope"
    command = [sys.executable, "-m", "pe_research.cli", "train", "--out", str(run), *FLAGS]
    proc = subprocess.Popen(
        [*command, "copy", "rope"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    kill_when(proc, lambda: 40 in checkpoints.steps(run))
    at_kill = read_events(run), runs.read_jsonl(run / runs.METRICS)
    cli.main(["train", "--out", str(run), *FLAGS, "copy", "rope"])
    assert runs.is_done(run)
    return run, *at_kill


def test_events_are_written_live(resumed):
    _, events, metrics = resumed
    steps = [s for s, _ in events["train/loss"]]
    assert steps and steps == [r["step"] for r in metrics][: len(steps)]


def test_after_kill_and_resume_events_mirror_the_jsonl_files(resumed):
    run, _, _ = resumed
    events = assert_events_mirror_files(run)
    assert [s for s, _ in events["train/loss"]] == list(range(10, 81, 10))
    assert [s for s, _ in events["fit/exact_match"]] == [20, 40, 60, 80]
    assert [s for s, _ in events["eval/exact_match"]] == [4, 8]


def test_cli_rebuilds_event_files_of_finished_runs(resumed, tmp_path, capsys):
    run, _, _ = resumed
    root = tmp_path / "copied"
    shutil.copytree(run.parent.parent, root)
    copy = root / "copy" / "rope"
    before = read_events(copy)
    for p in runs.event_files(copy):
        p.unlink()
    unfinished = root / "copy" / "unfinished"
    unfinished.mkdir()
    shutil.copy(copy / runs.CONFIG, unfinished / runs.CONFIG)

    cli.main(["tensorboard", str(root)])
    assert "Wrote 1 event files" in capsys.readouterr().out
    assert read_events(copy) == before
    assert_events_mirror_files(copy)
    assert not runs.event_files(unfinished)  # its trainer owns it


def test_cli_tensorboard_without_finished_runs_says_so(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["tensorboard", str(tmp_path)])
    assert "No finished runs" in capsys.readouterr().err
