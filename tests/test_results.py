"""pe_research.results: the results and curves tables of finished runs, their files, and
results.load (run directories are written by hand here, without training)."""

import json

import pandas as pd
import pytest

from pe_research import encodings, results, runs, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig


def config(encoding, seed=0, **hyper):
    return RunConfig(
        task=tasks.get("copy"),
        encoding=encodings.get(encoding, **hyper),
        model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
        train=TrainConfig(steps=10, train_length=4, stop_when_fit=True, fit_check_every=5),
        eval=EvalConfig(lengths=(4, 8)),
        seed=seed,
    )


def finished(run_dir, cfg, exact_match):
    """A finished run directory with eval rows {length: exact_match}, curves and fit checks."""
    runs.prepare(run_dir, cfg)
    rows = [
        {"length": n, "exact_match": e, "token_accuracy": e, "loss": 1.0 - e}
        for n, e in exact_match.items()
    ]
    runs.write_jsonl(run_dir / runs.METRICS, [{"step": s, "loss": 2.0 / s} for s in (5, 10)])
    runs.write_jsonl(run_dir / runs.FIT, [{"step": 5, "exact_match": exact_match[4]}])
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


def test_one_row_per_run_and_length_with_the_whole_config_and_the_verdict(sweep):
    frame = results.load(sweep)
    assert list(frame.columns[: len(results.COLUMNS)]) == list(results.COLUMNS)
    assert len(frame) == 3 * 2  # rope, nope, t5 (failed) x lengths 4, 8
    rope = frame[frame["encoding.name"] == "rope"].set_index("length")
    assert rope.loc[8, "exact_match"] == 0.25
    assert rope.loc[4, "encoding.base"] == 500.0
    assert rope.loc[4, "model.d_model"] == 16 and rope.loc[4, "train.steps"] == 10
    assert rope.loc[4, "train.fit_threshold"] == 0.95  # a default, recorded all the same
    assert bool(rope.loc[4, "fit"]) is True and rope.loc[4, "fit_step"] == 5
    assert rope.loc[4, "run"] == runs.run_id(config("rope", base=500.0))
    assert RunConfig.from_dict(json.loads(rope.loc[4, "config"])) == config("rope", base=500.0)
    nope = frame[frame["encoding.name"] == "nope"]
    assert set(nope["seed"]) == {1} and not nope["fit"].any()
    t5 = frame[frame["encoding.name"] == "t5"]
    assert list(t5["failed_step"]) == [7, 7] and t5["exact_match"].isna().all()
    assert "alibi" not in set(frame["encoding.name"])


def test_curves_hold_every_logged_step_and_fit_check(sweep):
    tables = results.from_runs(runs.finished_runs(sweep), experiment="tiny", scale="cpu")
    curves = tables.curves
    rope = curves[curves["run"] == runs.run_id(config("rope", base=500.0))]
    assert list(zip(rope["kind"], rope["step"], strict=True)) == [
        ("train", 5), ("train", 10), ("fit", 5)
    ]  # fmt: skip
    assert rope[rope["kind"] == "train"]["loss"].tolist() == [0.4, 0.2]
    assert set(curves["experiment"]) == {"tiny"} and set(tables.results["scale"]) == {"cpu"}


def test_the_tables_round_trip_through_their_files_and_merge_by_run(sweep, tmp_path):
    tables = results.from_runs(runs.finished_runs(sweep))
    folder = tmp_path / "tables"
    written = results.write(folder, tables)
    assert [p.name for p in written] == [results.RESULTS, results.CURVES, results.CSV]
    back = results.read(folder)
    pd.testing.assert_frame_equal(back.results, tables.results)
    pd.testing.assert_frame_equal(back.curves, tables.curves)
    assert results.load(folder).equals(back.results)
    assert results.load(folder / results.RESULTS).equals(back.results)
    csv = pd.read_csv(folder / results.CSV)
    assert list(csv.columns) == list(results.CSV_COLUMNS) and len(csv) == len(tables.results)

    # A run trained again replaces its rows; the others stay.
    rope = runs.run_id(config("rope", base=500.0))
    again = results.Tables(
        tables.results[tables.results["run"] == rope].assign(exact_match=0.5),
        tables.curves[tables.curves["run"] == rope],
    )
    merged = results.merge(tables, again)
    assert merged.run_ids == tables.run_ids and len(merged.results) == len(tables.results)
    assert set(merged.results[merged.results["run"] == rope]["exact_match"]) == {0.5}


def test_an_empty_folder_gives_an_empty_frame_and_a_warning(tmp_path):
    with pytest.warns(UserWarning, match="no finished runs"):
        frame = results.load(tmp_path)
    assert frame.empty and list(frame.columns) == list(results.COLUMNS)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        results.load(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="No results.parquet in .*sweep EXPERIMENT"):
        results.read(tmp_path)


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
