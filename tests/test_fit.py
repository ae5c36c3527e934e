"""The fit verdict (did a run learn its task?) and training until fit.

A run is fit when its exact match on held-out sequences at the training length reaches
train.fit_threshold. These tests train tiny models on offset (k=1) at training length 4, which
RoPE learns within a few hundred steps, and check the verdict, the early stop, the step cap,
packed seeds' own fit steps, resume after an interruption, and how tables and plots keep unfit
runs apart.
"""

import csv
import dataclasses

import pytest

from pe_research import encodings, results, runs, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.sweeps import plotting, summary
from pe_research.training import checkpoints, group_key

TIMING = {"tokens_per_s", "elapsed_s", "compile_s", "seconds", "check_s"}

BASE = RunConfig(
    task=tasks.get("offset", k=1),
    encoding=encodings.get("rope"),
    model=ModelConfig(num_layers=1, d_model=32, num_heads=2, mlp_dim=64),
    train=TrainConfig(
        steps=400, batch_size=32, train_length=4, log_every=20, stop_when_fit=True,
        fit_check_every=20,
    ),
    eval=EvalConfig(lengths=(4, 8), batch_size=32),
)  # fmt: skip


def with_train(cfg, **changes):
    return dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, **changes))


def rows(path):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in runs.read_jsonl(path)]


@pytest.fixture(scope="module")
def fit_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("fit") / "run"
    train.train(BASE, run, progress=False)
    return run


def test_training_stops_once_fit_and_the_verdict_agrees(fit_run):
    checks = runs.read_jsonl(fit_run / runs.FIT)
    stop = checks[-1]["step"]
    assert 0 < stop < BASE.train.steps, "offset k=1 at length 4 should fit well before the cap"
    assert [c["step"] for c in checks] == list(range(20, stop + 1, 20))
    assert [c["fit"] for c in checks] == [False] * (len(checks) - 1) + [True]
    assert runs.read_jsonl(fit_run / runs.METRICS)[-1]["step"] == stop
    assert checkpoints.steps(fit_run)[-1] == stop
    # The check scores the sequences that evaluation scores at the training length.
    (at_4,) = [r for r in runs.read_jsonl(fit_run / runs.EVAL) if r["length"] == 4]
    assert at_4["exact_match"] == checks[-1]["exact_match"] >= 0.95
    (row, _) = runs.eval_rows([fit_run])
    assert row["fit"] is True and row["fit_step"] == stop
    assert row["fit_exact_match"] == at_4["exact_match"]


def test_an_unfit_run_trains_to_the_cap_and_is_marked_unfit(tmp_path, fit_run):
    run = tmp_path / "capped"
    train.train(with_train(BASE, steps=40), run, progress=False)
    checks = runs.read_jsonl(run / runs.FIT)
    assert [c["step"] for c in checks] == [20, 40] and not any(c["fit"] for c in checks)
    assert runs.read_jsonl(run / runs.METRICS)[-1]["step"] == 40
    results.write(tmp_path, results.from_runs([run, fit_run]))
    with open(tmp_path / results.CSV, newline="") as f:
        by_run = {r["run"]: r for r in csv.DictReader(f)}
    capped, fitted = (by_run[runs.run_id(runs.load_config(d))] for d in (run, fit_run))
    assert capped["fit"] == "False" and capped["fit_step"] == ""
    assert fitted["fit"] == "True"
    assert int(fitted["fit_step"]) == runs.read_jsonl(fit_run / runs.FIT)[-1]["step"]


def test_a_stop_threshold_trains_past_the_fit_until_the_margin(tmp_path, fit_run):
    """With stop_threshold above fit_threshold a run trains on past its first fit check until a
    check reaches the stop threshold; its verdict and fit step still read fit_threshold."""
    first_fit = runs.read_jsonl(fit_run / runs.FIT)[-1]
    assert first_fit["exact_match"] < 1.0, "pick a task the check finds fit below 1.0"
    run = tmp_path / "margin"
    train.train(with_train(BASE, stop_threshold=1.0), run, progress=False)
    checks = runs.read_jsonl(run / runs.FIT)
    stop = checks[-1]["step"]
    assert checks[-1]["exact_match"] == 1.0 and stop > first_fit["step"]
    assert all(c["exact_match"] < 1.0 for c in checks[:-1])
    assert runs.read_jsonl(run / runs.METRICS)[-1]["step"] == stop
    (row, _) = runs.eval_rows([run])
    assert row["fit"] is True and row["fit_step"] == first_fit["step"] < stop
    assert row["fit_exact_match"] == 1.0


def test_without_stop_when_fit_a_run_still_gets_a_verdict_and_no_checks(tmp_path):
    run = tmp_path / "plain"
    train.train(with_train(BASE, steps=20, stop_when_fit=False), run, progress=False)
    assert not (run / runs.FIT).exists()
    row = next(runs.eval_rows([run]))
    assert row["fit"] is False and row["fit_step"] is None and not row["fit_checked"]
    # The threshold is the verdict's: at 0.0001 an untrained model that gets one sequence right
    # is "fit", at 1.0 only a perfect one.
    loose = runs.fit_verdict(with_train(BASE, fit_threshold=1e-4), [{**row, "exact_match": 0.01}])
    assert loose is True
    assert runs.fit_verdict(with_train(BASE, fit_threshold=1.0), [{**row, "exact_match": 0.99}])\
        is False  # fmt: skip


def test_packed_seeds_stop_at_their_own_fit_as_each_would_alone(tmp_path):
    cfgs = [dataclasses.replace(BASE, seed=s) for s in (0, 1, 2)]
    dirs = [tmp_path / f"seed{s}" for s in (0, 1, 2)]
    train.train_group(cfgs, dirs, progress=False)
    checks = [runs.read_jsonl(d / runs.FIT) for d in dirs]
    firsts = [c[-1]["step"] for c in checks]
    # Each seed's checks end at its first fit; training stopped at the last of them.
    for c in checks:
        assert [r["fit"] for r in c] == [False] * (len(c) - 1) + [True]
    assert len(set(firsts)) > 1, "the test needs seeds that fit at different checks"
    assert [next(runs.eval_rows([d]))["fit_step"] for d in dirs] == firsts
    assert checkpoints.steps(dirs[0])[-1] == max(firsts)
    # Each seed alone stops where it stopped in the pack, with the same rows and evaluation:
    # a seed fit early is frozen there, not trained on with its pack-mates.
    for s in (firsts.index(min(firsts)), firsts.index(max(firsts))):
        alone = tmp_path / f"alone{s}"
        train.train(cfgs[s], alone, progress=False)
        assert rows(alone / runs.FIT) == rows(dirs[s] / runs.FIT)
        assert [r["step"] for r in rows(alone / runs.METRICS)] == [
            r["step"] for r in rows(dirs[s] / runs.METRICS)
        ]
        for a, b in zip(rows(alone / runs.EVAL), rows(dirs[s] / runs.EVAL), strict=True):
            assert a["length"] == b["length"]
            assert a["token_accuracy"] == pytest.approx(b["token_accuracy"], abs=1e-3)
            assert a["exact_match"] == pytest.approx(b["exact_match"], abs=1e-3)


@pytest.mark.parametrize("interrupt_at", ["before_the_stop", "at_the_stop"])
def test_resume_after_an_interruption_gives_identical_rows(tmp_path, fit_run, monkeypatch,
                                                           interrupt_at):  # fmt: skip
    stop = runs.read_jsonl(fit_run / runs.FIT)[-1]["step"]
    at = stop - 20 if interrupt_at == "before_the_stop" else stop

    class Interrupted(Exception):
        pass

    save = checkpoints.save

    def save_then_stop(mgr, step, state, keys):
        save(mgr, step, state, keys)
        if step == at:
            mgr.wait_until_finished()
            raise Interrupted

    run = tmp_path / "run"
    monkeypatch.setattr(checkpoints, "save", save_then_stop)
    with pytest.raises(Interrupted):
        train.train(BASE, run, progress=False, checkpoint_every=20)
    monkeypatch.setattr(checkpoints, "save", save)
    assert not runs.is_done(run) and checkpoints.steps(run)[-1] == at
    train.train(BASE, run, progress=False, checkpoint_every=20)
    for name in (runs.METRICS, runs.FIT, runs.EVAL):
        assert rows(run / name) == rows(fit_run / name), name
    assert checkpoints.steps(run)[-1] == stop


def result_row(task, encoding, seed, length, exact, fit):
    return {
        "task": task, "encoding": encoding, "seed": seed, "train_length": 4, "length": length,
        "token_accuracy": exact, "exact_match": exact, "fit": fit, "fit_exact_match": 0.5,
        "fit_threshold": 0.95, "run": f"{task}/{encoding}/{seed}", "fit_checked": True,
        "fit_step": 100 if fit else None, "steps_cap": 300, "chance": 0.1,
    }  # fmt: skip


ROWS = [
    result_row("copy", enc, seed, n, 0.9 if n == 4 else 0.1, fit)
    for enc, fit in (("rope", True), ("nope", False))
    for seed in (0, 1)
    for n in (4, 8)
]


def test_tables_show_unfit_runs_apart():
    table = summary.generalization_table(ROWS, "exact_match")
    fit_part, unfit_part = table.split("Unfit runs")
    assert "**Fit: 2 of 4 runs**" in fit_part
    assert "| rope " in fit_part and "nope" not in fit_part
    assert "| nope (unfit) " in unfit_part and "| rope" not in unfit_part
    per_length = summary.summary_table(ROWS, "exact_match")
    lines = [line.split()[0:2] for line in per_length.splitlines()]
    assert lines.index(["nope", "(unfit)"]) > lines.index(["rope", "0.900"])
    steps = summary.steps_to_fit_table(ROWS)
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in steps.splitlines()]
    assert ["copy", "nope", "0/2", "never", "300"] in cells
    assert ["copy", "rope", "2/2", "100 [100, 100]", "300"] in cells


def test_plots_draw_unfit_runs_faded_and_dashed():
    fig = plotting.extrapolation_figure(ROWS, "exact_match")
    lines = {line.get_label(): line for line in fig.axes[0].lines}
    assert lines["rope"].get_linestyle() == "-" and lines["rope"].get_alpha() == 1.0
    unfit = lines["nope (unfit)"]
    assert unfit.get_linestyle() == "--" and unfit.get_alpha() < 0.5
    (legend,) = fig.legends  # one for the figure, beside its panels
    assert "nope (unfit)" in [t.get_text() for t in legend.get_texts()]
    # The legend lists every panel's series: here the unfit one is in the first of two panels.
    other = [dict(row, task="reverse") for row in ROWS if row["encoding"] == "rope"]
    fig = plotting.extrapolation_figure([*ROWS, *other], "exact_match")
    assert [ax.get_title() for ax in fig.axes[:2]] == ["copy", "reverse"]
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["rope", "nope (unfit)", "chance"]
    heat = plotting.heatmap_figure(ROWS, "exact_match")
    assert [t.get_text() for t in heat.axes[0].get_yticklabels()] == ["rope", "nope (unfit)"]
    steps = plotting.steps_to_fit_figure(ROWS)
    bars = [p.get_height() for p in steps.axes[0].patches]
    assert bars == [100]  # rope's mean fit step; nope never fit: a hollow marker at the cap
    hollow = [line for line in steps.axes[0].lines if line.get_markerfacecolor() == "none"]
    assert len(hollow) == 1 and list(hollow[0].get_ydata()) == [300, 300]


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(fit_threshold=0.0), "fit_threshold=0.0 is outside"),
        (dict(fit_threshold=1.5), "--train.fit-threshold"),
        (dict(fit_check_every=0), "--train.fit-check-every"),
        (dict(stop_threshold=0.9), "stop_threshold=0.9 is outside"),
        (dict(fit_check_every=30, steps_per_dispatch=20, log_every=20, steps=400),
         "multiple of steps_per_dispatch=20"),
    ],
)  # fmt: skip
def test_bad_fit_options_are_refused_naming_the_option(change, message):
    with pytest.raises(ValueError, match=message):
        with_train(BASE, **change).check()


def test_stop_when_fit_needs_exact_match_and_the_training_length(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("abc " * 200)
    lm = dataclasses.replace(
        BASE, task=tasks.get("byte_lm", corpus=str(corpus)), positions=BASE.positions
    )
    with pytest.raises(ValueError, match="byte_lm.*--train.stop-when-fit"):
        lm.check()
    assert runs.fit_verdict(lm, [{"length": 4, "exact_match": 1.0}]) is None
    beyond = dataclasses.replace(BASE, eval=EvalConfig(lengths=(8, 16)))
    with pytest.raises(ValueError, match="add the training length to --eval.lengths"):
        beyond.check()


def ood_rows(task, encoding, seeds, value, fit=True, lengths=(20, 24, 28)):
    return [
        {"task": task, "encoding": encoding, "seed": s, "train_length": 20, "length": n,
         "exact_match": 1.0 if n == 20 else value + 0.01 * s, "token_accuracy": 0.5,
         "fit": fit, "run": f"{task}/{encoding}/{s}"}
        for s in seeds
        for n in lengths
    ]  # fmt: skip


def test_published_table_sets_the_paper_beside_fit_runs_and_judges_the_order():
    rows = (
        ood_rows("count_copy", "nope", (0, 1, 2), 0.9)
        + ood_rows("count_copy", "t5", (0, 1, 2), 0.2)
        + ood_rows("count_copy", "alibi", (0, 1, 2), 0.5)
        + ood_rows("count_copy", "rope", (0, 1), 0.0, fit=False)
    )
    paper = {("count_copy", "nope"): 0.99, ("count_copy", "t5"): 0.77,
             ("count_copy", "alibi"): 0.29, ("count_copy", "rope"): 0.0}  # fmt: skip
    text = summary.published_table(
        rows, paper, metric="exact_match", lengths=(24, 28), source="K23"
    )
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines()]
    assert ["count_copy", "nope", "0.99", "0.910 ± 0.010", "3/3", "0.910 ± 0.010"] in cells
    assert ["count_copy", "rope", "0.00", "0.005 [0.000, 0.010]", "0/2", "-"] in cells
    verdict = text.splitlines()[-1]
    assert "paper nope > t5 > alibi; here nope > alibi > t5" in verdict
    assert "differs (alibi vs t5)" in verdict and "not fit here: rope" in verdict
    assert "not run here" not in verdict
    # A pair the sweep has not run yet is named as such, not as unfit.
    partial = [r for r in rows if r["encoding"] != "rope"]
    last = summary.published_table(
        partial, paper, metric="exact_match", lengths=(24, 28), source="K23"
    ).splitlines()[-1]
    assert "not run here: rope" in last and "not fit here" not in last
    agreeing = [r for r in rows if r["encoding"] != "t5"]
    assert "order agrees" in summary.published_table(
        agreeing, paper, metric="exact_match", lengths=(24, 28), source="K23"
    )


def test_runs_that_differ_only_in_evaluation_share_one_training_unless_fit_is_checked():
    plain = with_train(BASE, stop_when_fit=False)
    other_eval = dataclasses.replace(plain, eval=EvalConfig(lengths=(4, 16), positions="train"))
    assert group_key(plain) == group_key(other_eval)
    # The fit check reads the evaluation settings, so there they are part of the training.
    checked = dataclasses.replace(BASE, eval=EvalConfig(lengths=(4, 16), positions="train"))
    assert group_key(BASE) != group_key(checked)
