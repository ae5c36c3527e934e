"""pe_research.results.load: every run under a folder as a DataFrame (run directories are
written by hand here, without training)."""

import sys

import pytest

from pe_research import encodings, results, runs, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig

pd = pytest.importorskip("pandas")


def config(encoding, seed=0, **hyper):
    return RunConfig(
        task=tasks.get("copy"),
        encoding=encodings.get(encoding, **hyper),
        model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
        train=TrainConfig(steps=10, train_length=4),
        eval=EvalConfig(lengths=(4, 8)),
        seed=seed,
    )


def finished(run_dir, cfg, exact_match):
    """A finished run directory with eval rows {length: exact_match}."""
    runs.prepare(run_dir, cfg)
    rows = [
        {"length": n, "exact_match": e, "token_accuracy": e, "loss": 1.0 - e}
        for n, e in exact_match.items()
    ]
    runs.write_jsonl(run_dir / runs.EVAL, rows)
    runs.mark_done(run_dir)


@pytest.fixture
def sweep(tmp_path):
    finished(tmp_path / "copy/rope/seed0", config("rope", base=500.0), {4: 1.0, 8: 0.25})
    finished(tmp_path / "copy/nope/seed1", config("nope", seed=1), {4: 0.5, 8: 0.0})
    runs.prepare(tmp_path / "copy/alibi/seed0", config("alibi"))  # unfinished: left out
    runs.prepare(failed := tmp_path / "copy/t5/seed0", config("t5"))
    runs.mark_failed(failed, step=7, reason="loss became nan")
    return tmp_path


def test_one_row_per_run_and_length_with_flat_config_and_fit(sweep):
    frame = results.load(sweep)
    assert list(frame.columns[: len(results.FRAME_COLUMNS)]) == list(results.FRAME_COLUMNS)
    assert len(frame) == 3 * 2  # rope, nope, t5 (failed) x lengths 4, 8
    rope = frame[frame["encoding.name"] == "rope"].set_index("length")
    assert rope.loc[8, "exact_match"] == 0.25
    assert rope.loc[4, "encoding.base"] == 500.0
    assert rope.loc[4, "model.d_model"] == 16 and rope.loc[4, "train.steps"] == 10
    assert rope.loc[4, "train.fit_threshold"] == 0.95  # a default, not in config.json
    assert bool(rope.loc[4, "fit"]) is True
    nope = frame[frame["encoding.name"] == "nope"]
    assert set(nope["seed"]) == {1} and not nope["fit"].any()
    t5 = frame[frame["encoding.name"] == "t5"]
    assert list(t5["failed_step"]) == [7, 7] and t5["exact_match"].isna().all()
    assert "alibi" not in set(frame["encoding.name"])


def test_an_empty_folder_gives_an_empty_frame_and_a_warning(tmp_path):
    with pytest.warns(UserWarning, match="no finished runs"):
        frame = results.load(tmp_path)
    assert frame.empty and list(frame.columns) == list(results.FRAME_COLUMNS)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        results.load(tmp_path / "missing")


def test_damaged_eval_lines_are_skipped_with_a_warning(sweep):
    rope = sweep / "copy/rope/seed0" / runs.EVAL
    rope.write_text(rope.read_text() + '{"length": 16, "exact')  # torn last line
    with pytest.warns(UserWarning, match="torn last line"):
        frame = results.load(sweep)
    assert sorted(frame[frame["encoding.name"] == "rope"]["length"]) == [4, 8]

    nope = sweep / "copy/nope/seed1" / runs.EVAL
    nope.write_text("not json\n" + nope.read_text())  # damaged inside: that run is left out
    with pytest.warns(UserWarning, match="left out .*nope"):
        frame = results.load(sweep)
    assert "nope" not in set(frame["encoding.name"]) and "rope" in set(frame["encoding.name"])


def test_without_pandas_the_error_says_what_to_install(sweep, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"pe-research\[analysis\]"):
        results.load(sweep)
