"""Bad input: each kind is refused with a message that says what is wrong and what to do, a
non-zero exit of the command line (the message alone, no Python traceback), and nothing written
half (no run directory, no partial or temporary file; a file being replaced stays intact).

Bad inputs and what each produces (the tests match the quoted parts):

 1. unknown encoding: train copy rotary
    -> exit 2; "Unrecognized options: rotary" and the list of encodings; no run directory
 2. unknown task: train kopy rope
    -> exit 2; "Unrecognized options: kopy" and the list of tasks; no run directory
 3. unknown encoding in config.json
    -> "Unknown encoding 'rotary'. Known encodings: nope, ..."
 4. unknown experiment: sweep no_such_experiment
    -> exit 2; "No experiment 'no_such_experiment'. Known experiments: addition, ... (packaged,
       and files in ./experiments/) ..."; no output folder
 5. unknown scale: sweep prope --scale tpu
    -> exit 2; "has no scale 'tpu'; it has: cpu, gpu. Pass one of them to --scale, or no --scale
       for its CPU size"; no output folder
 6. bad shard: --shard 1/0, --shard x
    -> exit 2; "--shard '1/0' is not I/N with 0 <= I < N: write e.g. --shard 0/4 ..."; no output
       folder
 7. config.json not JSON (plot RUN)
    -> exit 2; "RUN/config.json is not valid JSON (...): restore it, or delete RUN and rerun the
       training"; no figure
 8. config.json: unknown top-level key
    -> "config has unknown key(s) ['sede']; fix config.json, or regenerate it with `pe-research
       train` ..."
 9. config.json: unknown nested key
    -> "config model has unknown key(s) ['dmodel']; it takes ['causal', 'd_model', ...]"; the
       same for an encoding's options
10. config.json: wrong type
    -> exit 2 (plot); "config model.d_model must be an integer, got '64'"; likewise a number, a
       list item, a choice
11. config.json without a section
    -> "config does not match RunConfig (KeyError: 'model'); regenerate it ..."
12. a run directory of a different config (sweep)
    -> exit 2; "RUN/config.json is a run of a different config (model.d_model: 32 in the file,
       16 expected): the file was edited or the directory copied. Delete RUN to retrain it, or
       restore its config.json"; nothing trained
13. a finished run given to train again
    -> exit 2; "RUN already holds a finished run; pass --overwrite to replace it or choose
       another output directory"; the run unchanged
14. zero or negative sizes: d_model, num_layers, num_heads, steps, batch_size, eval lengths
    -> exit 2; "model d_model must be >= 1, got 0: set --model.d-model to a positive integer"
       (and so on); no run directory
15. heads not dividing d_model
    -> exit 2; "d_model=30 is not divisible by num_heads=4: choose sizes with d_model %
       num_heads == 0"
16. odd rotary dims (rope, xpos)
    -> exit 2; "head_dim for rotary encodings must be even, got 3: choose d_model / num_heads
       even."
17. evaluation beyond a learned table
    -> exit 2; "learned absolute encoding has a table of max_positions=64 rows but the run needs
       position 399: raise max_positions to at least 400 or evaluate on shorter lengths"
18. randomized-position range smaller than the sequence
    -> exit 2; "randomized position range smaller than the sequence: max_pos=20 distinct
       positions cannot cover a width of 32 tokens; raise max_pos to at least 32 ..."
19. rope scaling with a missing key
    -> exit 2; "rope_scaling of type 'linear' is missing key 'factor'; add it (this type needs
       factor)"; yarn without original_max_position_embeddings likewise
20. rope scaling with an unknown key or type
    -> "rope_scaling of type 'linear' does not use key 'beta_fast'; ... Remove 'beta_fast'";
       "unknown key(s) ['type'] (older configs call rope_type 'type')"; exit 2, "Unknown
       rope_type 'lineer'. Known types: ..."
21. cope in an encoder; rope_nd on 1-D positions
    -> exit 2; "cope ... is undefined for a bidirectional model (causal=False): use a causal
       model or another encoding"; "needs 2-D positions pos_BLA but the 'contiguous' position
       sampler gives 1-D positions pos_BL: pick a matching sampler ..."
22. unwritable output folder
    -> exit 2; "could not write RUN/config.json (Permission denied): choose a folder you can
       write to with --out, or fix its permissions"; the folder stays empty
23. --out through a regular file
    -> exit 2; "could not write .../config.json (Not a directory): check that the output folder
       (--out) can be created and written"
24. full disk while a file is replaced
    -> "could not write F (File too large): free some space ... or write to another folder with
       --out; F is unchanged"; old bytes intact, no temporary file
25. full disk as a run starts (train, in a subprocess)
    -> exit 2; "could not write .../config.json (File too large): free some space ..."; no run
       directory (nor its new parent) left
26. interrupted write of eval.jsonl: a torn last line
    -> a warning "eval.jsonl: skipped a torn last line (interrupted write)"; the other rows are
       read, and `plot` draws them
27. a damaged line inside eval.jsonl
    -> "eval.jsonl:2 is not valid JSON and is not the last line, so it is not an interrupted
       write but a damaged file: delete RUN and rerun it"
28. corrupt or truncated checkpoint
    -> covered by tests/test_checkpoint.py (detected, reported, resumed from the previous good
       one)
29. an empty mixture pattern: train copy mixture --pattern
    -> exit 2; "mixture pattern is empty: name one encoding per layer"; every encoding's check
       runs before anything reads the encoding (test_encoding_checks_run_before_any_hook)

The file-system faults are real: a folder without write permission (entered as an unprivileged
user when the tests run as root), a path through a regular file, and the kernel's file size
limit (RLIMIT_FSIZE), which fails a write the way a full disk does (EFBIG instead of ENOSPC).
"""

import contextlib
import dataclasses
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from flax import nnx

from pe_research import cli, encodings, runs, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.sweeps import sweep

TINY = RunConfig(
    task=tasks.get("copy"),
    encoding=encodings.get("nope"),
    model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
    train=TrainConfig(steps=3, batch_size=4, train_length=3, log_every=1),
    eval=EvalConfig(lengths=(3, 6), batch_size=4),
)
TINY_EXPERIMENT = """
from pe_research import encodings, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig

def runs():
    return [RunConfig(
        task=tasks.get("copy"),
        encoding=encodings.get("nope"),
        model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
        train=TrainConfig(steps=3, batch_size=4, train_length=3, log_every=1),
        eval=EvalConfig(lengths=(3, 6), batch_size=4),
    )]
"""


def run_cli(argv, capsys):
    """Exit code and stderr (box drawing and line wraps of tyro's messages removed)."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return exit_info.value.code, " ".join(re.sub("[│╭╮╰╯─]", " ", err).split())


def finished_run(run_dir, cfg=TINY):
    """A run directory as training leaves it (made-up numbers, no training)."""
    runs.prepare(run_dir, cfg)
    rows = [{"length": n, "token_accuracy": 0.5, "exact_match": 0.1, "loss": 1.0} for n in (3, 6)]
    runs.write_jsonl(run_dir / runs.EVAL, rows)
    runs.mark_done(run_dir)
    return run_dir


def files_under(path):
    return sorted(p.relative_to(path) for p in Path(path).rglob("*"))


# -- the command line refuses bad configurations before writing anything ------------------------

CONFIG_ERRORS = [
    # (bad input, arguments after `train --out RUN`, what the message must say)
    ("unknown encoding", ["copy", "rotary"], r"Unrecognized options: rotary .*rope.*alibi"),
    ("unknown task", ["kopy", "rope"], r"Unrecognized options: kopy .*copy.*reverse"),
    ("zero d_model", ["--model.d-model", "0", "copy", "nope"],
     r"model d_model must be >= 1, got 0: set --model.d-model to a positive integer"),
    ("negative d_model", ["--model.d-model", "-8", "copy", "nope"],
     r"d_model must be >= 1, got -8"),
    ("zero layers", ["--model.num-layers", "0", "copy", "nope"],
     r"num_layers must be >= 1, got 0: set --model.num-layers"),
    ("zero heads", ["--model.num-heads", "0", "copy", "nope"], r"num_heads must be >= 1, got 0"),
    ("zero steps", ["--train.steps", "0", "copy", "nope"],
     r"train steps must be >= 1, got 0: set --train.steps to a positive integer"),
    ("negative batch", ["--train.batch-size", "-1", "copy", "nope"],
     r"batch_size must be >= 1, got -1: set --train.batch-size"),
    ("zero eval length", ["--eval.lengths", "0", "copy", "nope"],
     r"evaluation lengths must be >= 1, got \(0,\): list positive numbers"),
    ("heads not dividing d_model", ["--model.d-model", "30", "copy", "nope"],
     r"d_model=30 is not divisible by num_heads=4: choose sizes with d_model % num_heads == 0"),
    ("odd rotary dims", ["--model.d-model", "24", "--model.num-heads", "8", "copy", "rope"],
     r"head_dim for rotary encodings must be even, got 3: choose d_model / num_heads even"),
    ("odd xpos dims", ["--model.d-model", "24", "--model.num-heads", "8", "copy", "xpos"],
     r"head_dim for xpos must be even, got 3"),
    ("eval beyond a learned table",
     ["--eval.lengths", "200", "copy", "learned", "--max-positions", "64"],
     r"max_positions=64 rows but the run needs position \d+: raise max_positions to at least"),
    ("randomized range smaller than the sequence",
     ["--eval.positions", "train", "copy", "nope", "randomized", "--max-pos", "20"],
     r"randomized position range smaller than the sequence: max_pos=20 .* raise max_pos to at "
     r"least \d+"),
    ("rope scaling missing a key", ["copy", "rope", "rope-scaling", "--rope-type", "linear"],
     r"rope_scaling of type 'linear' is missing key 'factor'; add it"),
    ("unknown rope scaling type",
     ["copy", "rope", "rope-scaling", "--rope-type", "lineer", "--factor", "2"],
     r"Unknown rope_type 'lineer'. Known types: linear"),
    ("cope in an encoder", ["--model.no-causal", "copy", "cope"],
     r"undefined for a bidirectional model \(causal=False\): use a causal model"),
    ("rope_nd on 1-D positions", ["copy", "rope_nd"],
     r"needs 2-D positions pos_BLA but the 'contiguous' position sampler gives 1-D positions"),
    ("empty mixture pattern", ["copy", "mixture", "--pattern"],
     r"mixture pattern is empty: name one encoding per layer, for example --pattern rope"),
    ("mixture member that cannot serve the model",
     ["--model.d-model", "24", "--model.num-heads", "8", "copy", "mixture", "--pattern", "nope",
      "rope"], r"head_dim for rotary encodings must be even, got 3"),
]  # fmt: skip


@pytest.mark.parametrize(
    "argv, message", [c[1:] for c in CONFIG_ERRORS], ids=[c[0] for c in CONFIG_ERRORS]
)
def test_bad_configuration_exits_before_writing_anything(tmp_path, capsys, argv, message):
    code, err = run_cli(["train", "--out", tmp_path / "run", "--no-progress", *argv], capsys)
    assert code != 0
    assert re.search(message, err), err
    assert not (tmp_path / "run").exists()


SWEEP_ERRORS = [
    ("unknown experiment", ["no_such_experiment"],
     r"No experiment 'no_such_experiment'. Known experiments: addition, addition_hints, "),
    ("unknown scale", ["prope", "--scale", "tpu"],
     r"has no scale 'tpu'; it has: cpu, gpu. Pass one of them to --scale"),
    ("shard out of range", ["default", "--shard", "1/0"],
     r"--shard '1/0' is not I/N with 0 <= I < N: write e.g. --shard 0/4"),
    ("shard not I/N", ["default", "--shard", "x"], r"--shard 'x' is not I/N"),
]  # fmt: skip


@pytest.mark.parametrize(
    "argv, message", [c[1:] for c in SWEEP_ERRORS], ids=[c[0] for c in SWEEP_ERRORS]
)
def test_bad_sweep_arguments_exit_before_writing_anything(
    tmp_path, capsys, monkeypatch, argv, message
):
    monkeypatch.chdir(tmp_path)  # experiments are found by name from any folder
    code, err = run_cli(["sweep", *argv, "--out", tmp_path / "out", "--no-progress"], capsys)
    assert code != 0
    assert re.search(message, err), err
    assert not (tmp_path / "out").exists()


# -- hand-edited or damaged run directories ------------------------------------------------------


def edit(key_path, value):
    def apply(d):
        *parents, last = key_path
        for k in parents:
            d = d[k]
        if value is DELETE:
            del d[last]
        else:
            d[last] = value

    return apply


DELETE = object()
EDITS = [
    ("unknown key", edit(["sede"], 1), r"config has unknown key\(s\) \['sede'\]; fix config.json"),
    ("unknown nested key", edit(["model", "dmodel"], 64),
     r"config model has unknown key\(s\) \['dmodel'\]; it takes "
     r"\['attention', 'causal', 'compute_dtype', 'd_model'"),
    ("string for an integer", edit(["model", "d_model"], "64"),
     r"config model.d_model must be an integer, got '64'; fix config.json, or regenerate it"),
    ("string for a number", edit(["train", "learning_rate"], "fast"),
     r"config train.learning_rate must be a number, got 'fast'"),
    ("string in a list", edit(["eval", "lengths"], [3, "six"]),
     r"config eval.lengths\[1\] must be an integer, got 'six'"),
    ("not one of the choices", edit(["eval", "positions"], "random"),
     r"config eval.positions must be one of \['contiguous', 'train'\], got 'random'"),
    ("option the encoding does not have", edit(["encoding", "base"], 500.0),
     r"config encoding 'nope' has unknown key\(s\) \['base'\]; it takes \[\]"),
    ("unknown encoding", edit(["encoding", "name"], "rotary"),
     r"Unknown encoding 'rotary'. Known encodings: nope, "),
    ("missing section", edit(["model"], DELETE),
     r"config does not match RunConfig \(KeyError: 'model'\); regenerate it"),
]  # fmt: skip


@pytest.mark.parametrize("change, message", [e[1:] for e in EDITS], ids=[e[0] for e in EDITS])
def test_hand_edited_config_json_names_the_key(tmp_path, change, message):
    run_dir = finished_run(tmp_path / "run")
    d = json.loads((run_dir / runs.CONFIG).read_text())
    change(d)
    (run_dir / runs.CONFIG).write_text(json.dumps(d))
    with pytest.raises(ValueError, match=message) as error:
        runs.load_config(run_dir)
    assert str(run_dir / runs.CONFIG) in str(error.value)  # names the file


def test_damaged_config_json_fails_the_command_without_writing(tmp_path, capsys):
    run_dir = finished_run(tmp_path / "runs" / "a")
    (run_dir / runs.CONFIG).write_text('{"task": {"name": "copy"')  # cut short
    figure = tmp_path / "fig.png"
    code, err = run_cli(["plot", tmp_path / "runs", "--out", figure], capsys)
    assert code != 0 and not figure.exists()
    assert re.search(r"config.json is not valid JSON \(.*\): restore it, or delete .* rerun", err)

    d = TINY.to_dict()
    d["model"]["d_model"] = "64"
    (run_dir / runs.CONFIG).write_text(json.dumps(d))
    code, err = run_cli(["plot", tmp_path / "runs", "--out", figure], capsys)
    assert code != 0 and not figure.exists()
    assert "model.d_model must be an integer, got '64'" in err


def test_a_run_directory_of_another_config_is_refused(tmp_path, capsys):
    experiment = tmp_path / "tiny.py"
    experiment.write_text(textwrap.dedent(TINY_EXPERIMENT))
    out = tmp_path / "out"
    run_dir = finished_run(sweep.run_dir_for(out, TINY))
    d = json.loads((run_dir / runs.CONFIG).read_text())
    d["model"]["d_model"] = 32
    (run_dir / runs.CONFIG).write_text(json.dumps(d))
    before = files_under(out)
    code, err = run_cli(["sweep", experiment, "--out", out, "--no-progress"], capsys)
    assert code != 0
    assert re.search(
        r"is a run of a different config \(model.d_model: 32 in the file, 16 expected\): the file "
        r"was edited or the directory copied. Delete .* to retrain it",
        err,
    ), err
    assert files_under(out) == before  # nothing trained, nothing summarized

    # `train` into a finished run: refused, the run is left as it was.
    eval_before = (run_dir / runs.EVAL).read_bytes()
    code, err = run_cli(["train", "--out", run_dir, "--no-progress", "copy", "nope"], capsys)
    assert code != 0 and "already holds a finished run; pass --overwrite" in err
    assert (run_dir / runs.EVAL).read_bytes() == eval_before


def test_rope_scaling_dicts_with_missing_or_unknown_keys():
    cases = [
        ({"rope_type": "yarn", "factor": 2},
         r"'yarn' is missing key 'original_max_position_embeddings'; add it"),
        ({"rope_type": "linear", "factor": 2, "beta_fast": 32},
         r"'linear' does not use key 'beta_fast'; it takes factor. Remove 'beta_fast'"),
        ({"type": "linear", "factor": 2}, r"has no 'rope_type'; choose one of: linear"),
        ({"rope_type": "linear", "factor": 2, "type": "linear"},
         r"unknown key\(s\) \['type'\] \(older configs call rope_type 'type'\)"),
        ({"rope_type": "llama3", "factor": 8, "original_max_position_embeddings": 64,
          "low_freq_factor": 4.0, "high_freq_factor": 1.0},
         r"needs high_freq_factor > low_freq_factor"),
    ]  # fmt: skip
    for scaling, message in cases:
        with pytest.raises(ValueError, match=message):
            encodings.get("rope", scaling=scaling)


def test_torn_last_line_of_eval_jsonl_is_skipped_and_said(tmp_path, capsys):
    run_dir = finished_run(tmp_path / "runs" / "a")
    with open(run_dir / runs.EVAL, "a") as f:
        f.write('{"length": 12, "token_acc')  # the write was interrupted here
    with pytest.warns(UserWarning, match=r"eval.jsonl: skipped a torn last line \(interrupted"):
        rows = list(runs.eval_rows([run_dir]))
    assert [r["length"] for r in rows] == [3, 6]
    with pytest.warns(UserWarning, match="torn last line"):
        cli.main(["plot", str(tmp_path / "runs"), "--out", str(tmp_path / "fig.png")])
    assert "(1 runs)" in capsys.readouterr().out and (tmp_path / "fig.png").exists()

    # A bad line that is not the last one is damage, not an interrupted append.
    lines = (run_dir / runs.EVAL).read_text().splitlines()
    (run_dir / runs.EVAL).write_text("\n".join([lines[0], "{oops", *lines[1:]]) + "\n")
    with pytest.raises(ValueError, match=r"eval.jsonl:2 is not valid JSON and is not the last"):
        runs.read_jsonl(run_dir / runs.EVAL)


# -- file-system faults ------------------------------------------------------------------------


@contextlib.contextmanager
def unprivileged():
    """Drop root's power to write anywhere (the tests may run as root in a container)."""
    if os.geteuid() != 0:
        yield
        return
    os.setegid(65534)
    os.seteuid(65534)  # nobody
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


def test_unwritable_output_folder(capsys):
    with tempfile.TemporaryDirectory() as top:  # /tmp, so that `nobody` may enter it
        os.chmod(top, 0o755)
        folder = Path(top) / "read-only"
        folder.mkdir(mode=0o555)
        with unprivileged():
            code, err = run_cli(
                ["train", "--out", folder / "run", "--no-progress", "copy", "nope"], capsys
            )
        assert code != 0
        assert re.search(
            r"could not write .*run/config.json \(Permission denied\): choose a folder you can "
            r"write to with --out",
            err,
        ), err
        assert not list(folder.iterdir())


def test_output_path_through_a_file(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("not a folder")
    code, err = run_cli(
        ["train", "--out", tmp_path / "notes.txt" / "run", "--no-progress", "copy", "nope"], capsys
    )
    assert code != 0
    assert re.search(r"config.json \(Not a directory\): check that the output folder", err), err
    assert (tmp_path / "notes.txt").read_text() == "not a folder"


@contextlib.contextmanager
def file_size_limit(nbytes):
    """Writes past `nbytes` fail with EFBIG, as writes to a full disk fail with ENOSPC."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error, not a kill
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def test_full_disk_leaves_the_previous_file_intact(tmp_path):
    path = tmp_path / runs.EVAL
    old = "".join(json.dumps({"length": n, "token_accuracy": 0.5}) + "\n" for n in (3, 6))
    runs.write_atomic(path, old)
    new = old * 1000
    with file_size_limit(4096), pytest.raises(OSError) as error:
        runs.write_atomic(path, new)
    assert re.search(
        rf"could not write {re.escape(str(path))} \(File too large\): free some space .* "
        rf"--out; {re.escape(str(path))} is unchanged",
        str(error.value),
    ), error.value
    assert path.read_text() == old
    assert files_under(tmp_path) == [Path(runs.EVAL)]  # no temporary file left behind


FULL_DISK_TRAIN = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (256, resource.RLIM_INFINITY))
from pe_research import cli
cli.main(sys.argv[1:])
"""


def test_full_disk_when_a_run_starts_leaves_no_run_directory(tmp_path):
    out = tmp_path / "a" / "run"
    proc = subprocess.run(
        [sys.executable, "-c", FULL_DISK_TRAIN, "train", "--out", str(out), "--no-progress",
         "copy", "nope"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert re.search(r"could not write .*config.json \(File too large\): free some", proc.stderr)
    assert not (tmp_path / "a").exists()


class _Refused(encodings.NoPE):
    """An encoding whose check refuses every size, and which records anything read of it."""

    read: list = []  # noqa: RUF012 (one list shared by the test)

    def check(self, dims, max_position):
        raise ValueError("refused by check")

    def __getattribute__(self, name):
        if name not in ("check", "__class__", "__dict__") and not name.startswith("__"):
            type(self).read.append(name)
        return super().__getattribute__(name)


def test_encoding_checks_run_before_any_hook():
    """RunConfig.check and the model call the encoding's check before any hook or property of
    the encoding is read, so that a bad encoding (an empty mixture pattern) gets its own error
    rather than a crash in position_axes."""
    from pe_research.model import Transformer

    cfg = dataclasses.replace(TINY, encoding=_Refused())
    for build in (cfg.check, lambda: Transformer(cfg.model, cfg.encoding, 8, rngs=nnx.Rngs(0))):
        _Refused.read.clear()
        with pytest.raises(ValueError, match="refused by check"):
            build()
        assert _Refused.read == [], f"read before its check: {_Refused.read}"
