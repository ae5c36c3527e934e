"""The leaderboard (every encoding on every task): scores that count unfit seeds as 0, the order,
the tables and heatmap, and the sweep hooks that write them (experiments/leaderboard.py)."""

import random
import re
import textwrap
from pathlib import Path

import pytest

from pe_research import runs, train
from pe_research.config import series_label, task_label
from pe_research.sweeps import experiments, leaderboard, sweep

ROOT = Path(__file__).resolve().parents[1]


def unpadded(markdown: str) -> str:
    """A markdown table without its column padding (runs of spaces read as one)."""
    return re.sub(r" {2,}", " ", markdown)


def rows_of(runs_spec, train_length=4):
    """Rows as a sweep writes them: one per run x length in 4, 8, 16, 32 (1x-8x), exact match
    `em` at every length but 2x, where it is `em2`, token accuracy `em + .1`."""
    rows = []
    for i, (task, encoding, fit, em, em2) in enumerate(runs_spec):
        for k in (1, 2, 4, 8):
            value = em2 if k == 2 else em
            rows.append(
                {"task": task, "encoding": encoding, "seed": i, "run": f"r{i}",
                 "train_length": train_length, "length": k * train_length,
                 "exact_match": value, "token_accuracy": value + 0.1, "fit": fit}
            )  # fmt: skip
    return rows


SPEC = [
    # task, encoding, fit, exact match, exact match at 2x
    ("copy", "steady", True, 1.0, 0.9),
    ("copy", "steady", True, 1.0, 0.6),
    ("copy", "steady", True, 1.0, 0.3),
    ("copy", "lucky", True, 1.0, 1.0),
    ("copy", "lucky", False, 0.5, 0.2),
    ("copy", "lucky", False, 0.4, 0.1),
    ("copy", "never", False, 0.3, 0.3),
    ("sort", "steady", True, 1.0, 0.1),
    ("sort", "lucky", True, 1.0, 0.0),
    ("sort", "never", False, 0.2, 0.9),
]


def test_scores_count_unfit_seeds_as_zero_and_sort_best_first():
    table = {(e.task, e.encoding): e for e in leaderboard.entries(rows_of(SPEC))}
    steady, lucky, never = table["copy", "steady"], table["copy", "lucky"], table["copy", "never"]
    assert (steady.runs, steady.fit, lucky.fit, never.fit) == (3, 3, 1, 0)
    assert steady.scores["exact_match"][2] == pytest.approx((0.9 + 0.6 + 0.3) / 3)
    assert lucky.scores["exact_match"][2] == pytest.approx(1.0 / 3)  # two unfit seeds count 0
    assert lucky.fit_means["exact_match"][2] == pytest.approx(1.0)
    assert lucky.all_means["exact_match"][2] == pytest.approx((1.0 + 0.2 + 0.1) / 3)
    assert never.scores["exact_match"][2] == 0.0  # .9 at 2x on sort is unfit: no score
    assert lucky.fit_means["token_accuracy"][4] == pytest.approx(1.1)
    encodings, tasks = leaderboard.order(list(table.values()))
    assert encodings == ["steady", "lucky", "never"]  # .35, .17, 0 mean over the two tasks
    assert tasks == ["copy", "sort"]  # .43 > .03 mean over the three encodings


def test_tables_mark_what_is_not_a_score():
    rows = rows_of(SPEC)
    full = unpadded(leaderboard.full_table(rows))
    assert "| copy | never | 0/1 | (0.30) | (0.30) |" in full  # no seed fit: parentheses
    assert "| copy | lucky | 1/3 | 1.00 | 1.00 |" in full  # means over the fit seed
    assert full.index("| copy | steady") < full.index("| copy | lucky") < full.index("| sort |")
    glance = unpadded(leaderboard.at_a_glance(rows))
    assert "| steady | 0.60 / 1.00 (3/3) | 0.10 / 1.00 (1/1) |" in glance
    best = unpadded(leaderboard.best_per_task(rows, {"sort": "claimed: 1000x"}))
    assert "| copy | steady: 0.60 (3/3 fit) | steady: 1.00 (3/3 fit) | |" in best
    # At 8x on sort both fit seeds score 1.00: a tie, named as one, not a win for either.
    sort_row = "| sort | steady: 0.10 (1/1 fit) | lucky, steady: 1.00 (1/1 fit) | claimed: 1000x |"
    assert sort_row in best
    # Equal scores with different fit counts name each fit count.
    tie = [("copy", "steady", True, 1.0, 0.5), ("copy", "steady", True, 1.0, 0.5)]
    tie += [("copy", "lucky", True, 1.0, 1.0), ("copy", "lucky", False, 0.5, 0.5)]
    tie += [("copy", "third", True, 1.0, 0.5)]
    best = unpadded(leaderboard.best_per_task(rows_of(tie)))
    assert (
        "| copy | lucky (1/2 fit), steady (2/2 fit), third (1/1 fit): 0.50 "
        "| steady (2/2 fit), third (1/1 fit): 1.00 |"
    ) in best
    nothing = leaderboard.best_per_task(rows_of([("copy", "never", False, 0.3, 0.3)]))
    assert "none generalizes (0.00)" in nothing


def test_failed_runs_count_as_unfit_seeds():
    rows = rows_of(SPEC[:1]) + [
        {
            "task": "copy",
            "encoding": "steady",
            "seed": 9,
            "run": "failed",
            "train_length": 4,
            "length": 4,
            "failed_step": 12,
            "exact_match": None,
            "token_accuracy": None,
            "fit": None,
        }  # fmt: skip
    ]
    (entry,) = leaderboard.entries(rows)
    assert (entry.runs, entry.fit) == (2, 1)
    assert entry.scores["exact_match"][2] == pytest.approx(0.9 / 2)


def test_the_shipped_leaderboard_covers_every_encoding_and_task_and_draws():
    module = experiments.load_experiment(str(ROOT / "experiments" / "leaderboard.py"))
    configs = experiments.experiment_runs(module)
    names = {series_label(c) for c in configs}
    registered = set(module.encoding_names())
    assert len(names) == len(registered) and "nape [entmax15]" in names
    assert {c.task.name for c in configs} == set(module.TASKS)
    assert not set(module.TASKS) & set(module.TASKS_LEFT_OUT)
    rng = random.Random(0)
    rows = [
        {"task": task_label(cfg.task), "encoding": series_label(cfg), "seed": cfg.seed,
         "train_length": cfg.train.train_length, "length": n, "run": f"run{i}",
         "token_accuracy": rng.random(), "exact_match": rng.random(), "fit": rng.random() > .3}
        for i, cfg in enumerate(configs)
        for n in cfg.eval_lengths
    ]  # fmt: skip
    text = unpadded(module.sections(rows))
    for name in names:
        assert f"| {name} |" in text
    assert text.count("ASEntmax: 'up to 1000x") == 4
    assert "- addition: under the fit recipe no encoding learns it" in text
    (fig,) = module.figures(rows).values()
    assert [ax.get_title() for ax in fig.axes if ax.get_title()] == [
        "exact match at 2x the training length",
        "exact match at 8x the training length",
    ]


def test_a_sweep_writes_the_experiments_own_sections_and_figures(tmp_path, monkeypatch):
    """An experiment's `sections` and `figures` reach its page and the results folder."""
    experiment = tmp_path / "tiny_board.py"
    experiment.write_text(
        textwrap.dedent(
            """
            from pe_research import encodings, tasks
            from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
            from pe_research.sweeps import leaderboard

            def runs():
                return [
                    RunConfig(task=tasks.get(t), encoding=encodings.get(e),
                              model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
                              train=TrainConfig(steps=2, batch_size=4, train_length=3),
                              eval=EvalConfig(lengths=(3, 6, 12, 24), batch_size=4))
                    for t in ("copy", "reverse") for e in ("nope", "rope")
                ]

            def sections(rows):
                board = "## Leaderboard\\n\\n![board](board.png)\\n\\n"
                return board + leaderboard.full_table(rows)

            def figures(rows):
                return {"board": leaderboard.leaderboard_figure(rows)}
            """
        )
    )

    def fake_group(cfgs, run_dirs, **_):
        for i, (cfg, run_dir) in enumerate(zip(cfgs, run_dirs, strict=True)):
            runs.prepare(run_dir, cfg, overwrite=True)
            rows = [{"length": n, "token_accuracy": 1.0, "exact_match": 1.0 if n == 3 else i / 4}
                    for n in cfg.eval_lengths]  # fmt: skip
            runs.write_jsonl(run_dir / runs.EVAL, rows)
            runs.mark_done(run_dir)

    monkeypatch.setattr(train, "train_group", fake_group)
    out = tmp_path / "out"
    _, written = sweep.run_experiment(str(experiment), out, progress=False)
    summary = unpadded((out / "summary.md").read_text())
    assert "## Leaderboard" in summary
    assert (
        "| reverse | rope | 1/1 | 1.00 | 0.00 | 0.00 | 0.00 | 1.00 | 1.00 | 1.00 | 1.00 |"
        in summary
    )
    assert "![board](board.png)" in summary and out / "board.png" in written
    assert (out / "board.png").stat().st_size > 1000
