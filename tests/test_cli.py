"""End to end: the command line -> run directories -> tables and a PNG."""

import json
import subprocess
import sys
import textwrap

import pytest

from pe_research import cli, runs

TINY_FLAGS = [
    "--no-progress",
    "--model.num-layers", "1",
    "--model.d-model", "16",
    "--model.num-heads", "2",
    "--model.mlp-dim", "32",
    "--train.steps", "4",
    "--train.batch-size", "8",
    "--train.train-length", "4",
    "--train.log-every", "2",
    "--eval.lengths", "4", "8",
    "--eval.batch-size", "8",
]  # fmt: skip


def is_png(path):
    return path.exists() and path.stat().st_size > 1000 and path.read_bytes()[:4] == b"\x89PNG"


def test_train_then_plot(tmp_path, capsys):
    run_a, run_b = tmp_path / "a", tmp_path / "b"
    cli.main(["train", "--out", str(run_a), *TINY_FLAGS, "reverse", "rope", "--base", "500"])
    cli.main(["train", "--out", str(run_b), *TINY_FLAGS, "reverse", "alibi"])
    printed = capsys.readouterr().out
    assert "reverse: token_accuracy by evaluation length" in printed
    with pytest.raises(SystemExit):  # a finished run is refused before any training
        cli.main(["train", "--out", str(run_b), *TINY_FLAGS, "reverse", "alibi"])
    assert "--overwrite" in capsys.readouterr().err
    config = json.loads((run_a / "config.json").read_text())
    assert config["encoding"]["name"] == "rope" and config["encoding"]["base"] == 500.0
    assert config["task"]["name"] == "reverse"
    assert [r["length"] for r in runs.read_jsonl(run_b / "eval.jsonl")] == [4, 8]

    png = tmp_path / "fig" / "plot.png"
    cli.main(["plot", str(tmp_path), "--out", str(png), "--metric", "exact_match"])
    assert is_png(png)
    assert "2 runs" in capsys.readouterr().out


def test_sweep_runs_an_experiment_file_and_skips_finished_runs(tmp_path, capsys):
    experiment = tmp_path / "tiny.py"
    experiment.write_text(
        textwrap.dedent(
            """
            from pe_research import encodings, tasks
            from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig

            def runs():
                return [
                    RunConfig(
                        task=tasks.get(task),
                        encoding=encodings.get(enc),
                        model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
                        train=TrainConfig(steps=3, batch_size=4, train_length=3, log_every=3),
                        eval=EvalConfig(lengths=(3, 6), batch_size=4),
                    )
                    for task in ("offset",)
                    for enc in ("nope", "learned")
                ]
            """
        )
    )
    out = tmp_path / "out"
    cli.main(["sweep", str(experiment), "--out", str(out), "--no-progress"])
    assert len(runs.find_runs([out])) == 2
    assert is_png(out / "extrapolation_token_accuracy.png")
    first = capsys.readouterr().out
    assert "Trained 2 runs" in first and "offset: exact_match" in first
    cli.main(["sweep", str(experiment), "--out", str(out), "--no-progress"])
    assert "2 of 2 runs already finished" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "--model.d-model", "30", "copy", "nope"], "not divisible by num_heads=4"),
        (["train", "--model.num-heads", "8", "--model.d-model", "24", "copy", "rope"],
         "head_dim for rotary encodings must be even"),
        (["train", "--eval.lengths", "200", "copy", "learned", "--max-positions", "64"],
         "max_positions=64"),
        (["sweep", "no_such_experiment"], "Known experiments: addition, "),
        (["plot", "/nonexistent/dir"], "does not exist"),
    ],
)  # fmt: skip
def test_bad_input_exits_with_a_message(tmp_path, capsys, argv, message):
    if argv[0] == "train":
        argv = [*argv[:1], "--out", str(tmp_path / "run"), *argv[1:]]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code != 0
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run" / "DONE").exists()


def test_unknown_encoding_is_rejected_with_the_choices(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "copy", "rotary"])
    assert exit_info.value.code != 0
    err = capsys.readouterr().err
    assert "rope" in err and "alibi" in err


HEAVY = [
    "matplotlib", "orbax", "tensorflow_datasets", "grain", "tensorboardX", "submitit", "wandb",
]  # fmt: skip
"""Libraries that only some commands need; parsing arguments must not import them."""

PARSE_ONLY = """
import sys
from pe_research import cli
try:
    cli.main(sys.argv[1:])
except SystemExit as e:
    code = e.code
heavy = [m for m in {heavy} if m in sys.modules]
print("HEAVY", heavy, "EXIT", code)
"""


@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"], ["train", "--no-such-option"]])
def test_parsing_arguments_imports_only_the_config(argv):
    """`--help` and argument errors import the typed config (jax, flax) and nothing a command
    imports only when it runs, which made `pe-research --help` 1.6 s slower than jax and flax."""
    code = PARSE_ONLY.format(heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
    assert "HEAVY [] EXIT" in out.stdout, out.stdout + out.stderr
    assert out.stdout.split()[-1] == ("0" if "--help" in argv else "2")


def test_console_script_lists_the_commands():
    out = subprocess.run(
        [sys.executable, "-m", "pe_research.cli", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0
    for command in ("train", "sweep", "launch", "plot", "properties", "analyze", "bench", "data"):
        assert command in out.stdout
