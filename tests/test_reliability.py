"""Results that can be trusted later: determinism, divergence shown rather than hidden, and the
code version of every run recorded and checked.

- Determinism: the same config and seed train to identical metrics.jsonl and
  eval.jsonl rows twice in a row (`test_same_config_and_seed_give_identical_rows`). Packed seeds
  equal one-by-one seeds, and 8 simulated devices equal 1 device within 1e-5, in
  tests/test_packing.py (`test_packed_seeds_equal_one_by_one`,
  `test_eight_devices_match_one_device`).
- Divergence: a learning rate that must diverge marks its run FAILED with the step, the
  sweep goes on with the next run and does not redo the failed one unless asked, and the
  summary shows failed@step N and a Failed runs section (`test_a_diverging_run_...`, with real
  training; the summary and sweep logic also on hand-made FAILED records below).
- Provenance: config.json records the package version, git commit and uncommitted
  changes, jax/flax versions and the devices; a summary of runs from different code versions
  keeps them apart under a warning.
- File modes: a run's files, written atomically through temporary files, take the mode the
  umask gives.
"""

import csv
import dataclasses
import json
import os
import stat
import subprocess
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

import pe_research
from pe_research import encodings, results, runs, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.sweeps import pages, plotting, summary, sweep

TINY = RunConfig(
    task=tasks.get("copy"),
    encoding=encodings.get("nope"),
    model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
    train=TrainConfig(steps=3, batch_size=4, train_length=3, log_every=1),
    eval=EvalConfig(lengths=(3,), batch_size=4),
)
TIMING = {"tokens_per_s", "elapsed_s", "compile_s", "seconds"}
"""Row fields that measure time, not results."""


def fake_run(run_dir, cfg, value):
    """A finished run directory with made-up numbers (no training), of a run that fit its task
    (exact match 1.0), so that tables compare it."""
    runs.prepare(run_dir, cfg, overwrite=True)
    rows = [
        {"length": n, "token_accuracy": value, "exact_match": 1.0, "loss": 1.0}
        for n in cfg.eval_lengths
    ]
    runs.write_jsonl(run_dir / runs.EVAL, rows)
    runs.mark_done(run_dir)
    return run_dir


def failed_run(run_dir, cfg, step, reason="loss became nan"):
    runs.prepare(run_dir, cfg, overwrite=True)
    runs.mark_failed(run_dir, step=step, reason=reason)
    return run_dir


# -- provenance ---------------------------------------------------------------------------------


def test_config_json_records_the_code_and_the_devices(tmp_path):
    import flax
    import jax

    recorded = json.loads((runs.prepare(tmp_path / "run", TINY) / runs.CONFIG).read_text())
    versions = recorded["versions"]
    assert versions["pe_research"] == pe_research.__version__
    assert versions["jax"] == jax.__version__ and versions["flax"] == flax.__version__
    assert versions["platform"] == jax.devices()[0].platform == "cpu"
    assert versions["device_kinds"] == [jax.devices()[0].device_kind]
    package = Path(pe_research.__file__).parent
    head = subprocess.run(
        ["git", "log", "-1", "--format=%H", "HEAD", "--", "."], cwd=package, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    if head.returncode == 0:  # a git checkout: the package's last commit, and whether it was edited
        assert versions["git_commit"] == head.stdout.strip()
        diff = subprocess.run(
            ["git", "status", "--porcelain", "--", "."], cwd=package, capture_output=True,
            text=True, check=True,
        ).stdout  # fmt: skip
        assert versions["git_dirty"] == bool(diff.strip())
    else:  # an installed copy: nothing is claimed
        assert "git_commit" not in versions
    assert runs.read_versions(tmp_path / "run") == versions


def test_the_recorded_commit_is_the_packages_last_change_so_docs_commits_do_not_split_a_sweep(
    tmp_path,
):
    from pe_research.runs import provenance

    def git(*args):
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "code")
    code = git("rev-parse", "HEAD")
    (tmp_path / "README.md").write_text("docs\n")
    git("add", ".")
    git("commit", "-qm", "docs only")
    assert git("rev-parse", "HEAD") != code
    assert provenance.folder_revision(package) == {"git_commit": code, "git_dirty": False}
    (package / "__init__.py").write_text("x = 2\n")  # an edit to the code is still told apart
    edited = provenance.folder_revision(package)
    assert edited["git_commit"] == code and edited["git_dirty"]
    git("commit", "-qam", "code again")
    assert provenance.folder_revision(package)["git_commit"] == git("rev-parse", "HEAD")


def test_summary_keeps_runs_of_different_code_apart_and_warns(tmp_path):
    dirs = [fake_run(tmp_path / f"copy/nope/seed{s}", dataclasses.replace(TINY, seed=s), 0.5)
            for s in range(3)]  # fmt: skip
    recorded = json.loads((dirs[2] / runs.CONFIG).read_text())
    recorded["versions"].update(git_commit="0" * 40, jax="0.0.1", git_dirty=False)
    (dirs[2] / runs.CONFIG).write_text(json.dumps(recorded))
    (dirs[2] / runs.EVAL).write_text(
        "".join(json.dumps({"length": n, "token_accuracy": 0.9, "exact_match": 1.0, "loss": 1.0})
                + "\n" for n in (3, 6))
    )  # fmt: skip

    rows = summary.finished_rows(dirs)
    table = summary.generalization_table(rows)
    assert table.startswith("WARNING: these results come from 2 different versions of the code")
    assert "git 000000000000" in table and "jax 0.0.1" in table
    assert "(1 runs: copy/nope/seed2)" in table  # the odd one out is named
    lines = [x for x in table.splitlines() if x.startswith("| copy")]
    assert len(lines) == 2  # one line per code version: never averaged together
    old, new = sorted(lines, key=lambda x: "[code B]" in x)
    assert "[code A]" in old and "| 2    " in old and "0.500 [0.500, 0.500]" in old
    assert "[code B]" in new and "0.900" in new
    assert "nope [code B]" in summary.summary_table(rows)

    tables = results.from_runs(dirs)
    # A page goes further than the tables: runs of two commits are not published at all.
    page = pages.sweep_page(pages.read_sweep(tmp_path, tables))
    assert "- Not published: its 3 runs span 2 commits" in page and "000000000000 (1 run)" in page
    results.write(tmp_path, tables)
    with open(tmp_path / results.CSV, newline="") as f:
        assert len({r["commit"] for r in csv.DictReader(f)}) == 2

    same = summary.finished_rows(dirs[:2])
    assert summary.code_warning(same) is None and "[code" not in summary.generalization_table(same)


# -- failures -----------------------------------------------------------------------------------


def test_mark_failed_records_step_and_reason(tmp_path):
    run_dir = failed_run(tmp_path / "run", TINY, step=7)
    record = runs.failure(run_dir)
    assert record["step"] == 7 and record["reason"] == "loss became nan" and record["time"]
    assert not runs.is_done(run_dir) and runs.is_finished(run_dir)
    assert runs.failure(tmp_path) is None
    (run_dir / runs.FAILED).write_text("diverged\n")  # made by hand: still a failure
    assert runs.failure(run_dir)["step"] == -1
    runs.prepare(run_dir, TINY)  # training it again starts without the old failure
    assert runs.failure(run_dir) is None


def test_failed_runs_are_shown_not_hidden(tmp_path):
    dirs = [
        fake_run(tmp_path / "copy/nope/seed0", TINY, 0.5),
        failed_run(tmp_path / "copy/nope/seed1", dataclasses.replace(TINY, seed=1), step=7),
        failed_run(
            tmp_path / "copy/rope/seed0",
            dataclasses.replace(TINY, encoding=encodings.get("rope")),
            step=3,
            reason="loss became inf by step 3",
        ),
    ]
    rows = summary.finished_rows(dirs)
    per_length = summary.summary_table(rows)
    assert "rope" in per_length and per_length.count("failed@step 3") == 1
    assert "0.500*" in per_length and "*: some seeds failed" in per_length

    table = summary.generalization_table(rows)
    nope = next(x for x in table.splitlines() if "| nope" in x)
    rope = next(x for x in table.splitlines() if "| rope" in x)
    assert "2 (1 failed)" in nope and "0.500" in nope
    assert "1 (1 failed)" in rope and "failed@step 3" in rope
    assert "2 runs failed" in table

    tables = results.from_runs(dirs)
    md = pages.sweep_page(pages.read_sweep(tmp_path, tables))
    failures = md[md.index("## Failed runs") :]
    nope, rope = (runs.run_id(runs.load_config(d)) for d in dirs[1:])
    assert f"`{nope}`): failed at step 7: loss became nan" in failures
    assert f"`{rope}`): failed at step 3: loss became inf by step 3" in failures
    assert "--retry-failed" in failures
    results.write(tmp_path, tables)
    with open(tmp_path / results.CSV, newline="") as f:
        table = list(csv.DictReader(f))
    failed = [r for r in table if r["failed_step"]]
    assert len(failed) == 2 and {r["token_accuracy"] for r in failed} == {""}
    assert {r["failed_step"] for r in failed} == {"3", "7"}

    with pytest.warns(UserWarning, match=r"leave out 2 failed run\(s\).*copy / rope seed 0"):
        fig = plotting.extrapolation_figure(rows)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert labels == ["nope", "chance"]
    plt.close(fig)


# -- real training ------------------------------------------------------------------------------


def comparable(rows):
    return [{k: v for k, v in row.items() if k not in TIMING} for row in rows]


def test_same_config_and_seed_give_identical_rows(tmp_path):
    from pe_research import train

    for name in ("a", "b"):
        train.train(TINY, tmp_path / name, progress=False)
    for name in (runs.METRICS, runs.EVAL):
        a = runs.read_jsonl(tmp_path / "a" / name)
        b = runs.read_jsonl(tmp_path / "b" / name)
        assert len(a) == len(b) > 0 and comparable(a) == comparable(b), name
    assert [r["step"] for r in runs.read_jsonl(tmp_path / "a" / runs.METRICS)] == [1, 2, 3]


def test_a_diverging_run_is_marked_failed_and_the_sweep_goes_on(tmp_path, capsys):
    diverging = dataclasses.replace(
        TINY,
        encoding=encodings.get("rope"),
        train=dataclasses.replace(
            TINY.train, steps=4, learning_rate=1e6, warmup_steps=0, grad_clip=1e9
        ),
    )
    cfgs = [diverging, TINY]
    dirs = [sweep.run_dir_for(tmp_path, c) for c in cfgs]
    done = sweep.run_sweep(cfgs, tmp_path, progress=False)
    out = capsys.readouterr().out
    record = runs.failure(dirs[0])
    assert record is not None, out
    assert 1 <= record["step"] <= 4 and "learning_rate" in record["reason"]
    assert done.failed == [dirs[0]] and done.trained == [dirs[1]] and done.complete
    assert f"FAILED at step {record['step']}" in out and "1 run failed" in out

    rows = summary.finished_rows(done.dirs)
    assert f"failed@step {record['step']}" in summary.generalization_table(rows)

    done = sweep.run_sweep(cfgs, tmp_path, progress=False)  # deterministic: not tried again
    assert not done.trained and not done.failed and done.failed_runs == [dirs[0]]
    assert "pass --retry-failed" in capsys.readouterr().out

    done = sweep.run_sweep(cfgs, tmp_path, progress=False, retry_failed=True)
    assert done.failed == [dirs[0]] and runs.failure(dirs[0])["step"] == record["step"]


# -- file modes ------------------------------------------------------------------------------------


@pytest.fixture
def umask():
    """Set the process umask for one test, and restore it after."""
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


def test_run_files_follow_the_umask(tmp_path, umask):
    """Every file of a finished run (config.json, eval.jsonl, event file, checkpoints, DONE) is
    readable by group and others under umask 022, as files any program creates are: the atomic
    writes go through temporary files that are created private and renamed."""
    umask(0o022)
    run_dir = tmp_path / "run"
    train.train(TINY, run_dir, progress=False)
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert {runs.CONFIG, runs.EVAL, runs.DONE} <= {p.name for p in files}
    assert any(p.name.startswith("events.out.tfevents") for p in files)
    private = [str(p.relative_to(run_dir)) for p in files if p.stat().st_mode & 0o044 != 0o044]
    assert not private, f"files not readable by group and others under umask 022: {private}"


def test_atomic_writes_take_the_mode_the_umask_gives(tmp_path, umask):
    for mask, mode in ((0o022, 0o644), (0o077, 0o600), (0o002, 0o664)):
        umask(mask)
        path = tmp_path / f"file-{mask:o}.json"
        runs.write_atomic(path, "{}")
        assert stat.S_IMODE(path.stat().st_mode) == mode, (oct(mask), oct(path.stat().st_mode))


def test_a_run_is_dated_by_the_time_its_done_file_holds(tmp_path):
    run = fake_run(tmp_path / "run", TINY, 0.5)
    (run / runs.DONE).write_text("1970-01-02T00:00:00+00:00\n")
    assert runs.finished_at(run).isoformat() == "1970-01-02T00:00:00+00:00"
    assert runs.finished_at(tmp_path) is None
