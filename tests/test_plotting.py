"""Figures from rows: panels, lines and cell values match the rows; files are written."""

import dataclasses
import importlib.util
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from pe_research import cli, encodings, runs
from pe_research.config import RunConfig, TrainConfig
from pe_research.sweeps import plotting

TASKS, ENCODINGS, SEEDS, LENGTHS = ("copy", "reverse"), ("alibi", "nope", "rope"), (0, 1), (4, 8)


def score(task, enc, seed, n):
    return round(0.9 - 0.1 * ENCODINGS.index(enc) - 0.02 * n - 0.05 * seed - 0.1 * len(task), 4)


def make_rows(chance=None):
    return [
        {
            "task": task,
            "encoding": enc,
            "seed": seed,
            "train_length": 4,
            "length": n,
            "token_accuracy": score(task, enc, seed, n),
            "exact_match": score(task, enc, seed, n) / 2,
            **({} if chance is None else {"chance": chance}),
        }
        for task in TASKS
        for enc in ENCODINGS
        for seed in SEEDS
        for n in LENGTHS
    ]


def panels(fig):
    """The plot panels of a figure (colorbars are axes too, but hold no title)."""
    return [ax for ax in fig.axes if ax.get_title()]


def test_lines_one_panel_per_task_one_line_per_encoding():
    fig = plotting.extrapolation_figure(make_rows(), "token_accuracy")
    axes = panels(fig)
    assert [ax.get_title() for ax in axes] == list(TASKS)
    for ax, task in zip(axes, TASKS, strict=True):
        lines = {line.get_label(): line for line in ax.get_lines()}
        assert set(ENCODINGS) <= set(lines) and "chance" not in lines
        x, y = lines["nope"].get_data()
        np.testing.assert_array_equal(x, LENGTHS)
        expected = [np.mean([score(task, "nope", s, n) for s in SEEDS]) for n in LENGTHS]
        np.testing.assert_allclose(y, expected)
        assert [line.get_linestyle() for line in ax.get_lines()].count("--") == 1  # train length
    plt.close(fig)


@pytest.mark.parametrize(
    ("chance", "metric", "level"),
    [(0.0625, "token_accuracy", 0.0625), ({"exact_match": 0.01}, "exact_match", 0.01)],
)
def test_chance_is_a_dotted_line_when_rows_give_it(chance, metric, level):
    fig = plotting.extrapolation_figure(make_rows(chance), metric)
    for ax in panels(fig):
        (line,) = [line for line in ax.get_lines() if line.get_label() == "chance"]
        assert line.get_linestyle() == ":"
        np.testing.assert_allclose(line.get_data()[1], level)


def test_heatmap_cells_are_the_means_over_seeds():
    fig = plotting.heatmap_figure(make_rows(), "exact_match")
    axes = panels(fig)
    assert [ax.get_title() for ax in axes] == list(TASKS)
    for ax, task in zip(axes, TASKS, strict=True):
        (image,) = ax.get_images()
        expected = [
            [np.mean([score(task, enc, s, n) / 2 for s in SEEDS]) for n in LENGTHS]
            for enc in ENCODINGS
        ]
        np.testing.assert_allclose(image.get_array(), expected)
        assert [t.get_text() for t in ax.get_yticklabels()] == list(ENCODINGS)
        written = sorted(float(t.get_text()) for t in ax.texts)
        np.testing.assert_allclose(written, sorted(np.round(np.ravel(expected), 2)))


def test_heatmap_leaves_missing_cells_blank():
    rows = [r for r in make_rows() if not (r["encoding"] == "rope" and r["length"] == 8)]
    ax = panels(plotting.heatmap_figure(rows))[0]
    cells = ax.get_images()[0].get_array()
    assert np.ma.is_masked(cells[2, 1]) or np.isnan(cells[2, 1])
    assert len(ax.texts) == len(ENCODINGS) * len(LENGTHS) - 1


def test_a_leaderboards_many_tasks_and_encodings_stay_readable():
    # 13 tasks x 28 encodings, a full leaderboard: panels in rows of at most 4, every series its
    # own colour and marker, the legend inside the figure.
    tasks, encs = [f"task{t:02d}" for t in range(13)], [f"enc{e:02d}" for e in range(28)]
    rows = [
        {"task": t, "encoding": e, "seed": 0, "train_length": 4, "length": n,
         "exact_match": (i + j) / 40, "fit_checked": True, "steps_cap": 100,
         "fit_step": None if j == 0 else 50, "run": f"{t}/{e}"}
        for i, t in enumerate(tasks) for j, e in enumerate(encs) for n in LENGTHS
    ]  # fmt: skip
    fig = plotting.extrapolation_figure(rows, "exact_match")
    # The grid depends on the tasks only: two encodings draw the heatmap and steps in a third
    # of the time 28 take (a cell's text each).
    few = [r for r in rows if r["encoding"] in encs[:2]]
    for drawn in (fig, plotting.heatmap_figure(few, "exact_match")):
        axes = panels(drawn)
        assert len(axes) == 13 and len({round(ax.get_position().x0, 3) for ax in axes}) == 4
    styles = {
        (line.get_color(), line.get_marker())
        for line in panels(fig)[0].get_lines()
        if line.get_label() in encs
    }
    assert len(styles) == len(encs)
    fig.canvas.draw()
    (legend,) = fig.legends
    inside = legend.get_window_extent().transformed(fig.transFigure.inverted())
    assert inside.x0 >= 0 and inside.y0 >= 0 and inside.x1 <= 1.0001 and inside.y1 <= 1.0001
    right_panel = max(ax.get_position().x1 for ax in panels(fig))
    assert right_panel <= inside.x0  # the legend is beside the panels, not over them
    steps = panels(plotting.steps_to_fit_figure(few))
    assert len({round(ax.get_position().x0, 3) for ax in steps}) == 4


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="Unknown metric 'loss'"):
        plotting.heatmap_figure(make_rows(), "loss")
    with pytest.raises(ValueError, match="No result rows"):
        plotting.extrapolation_figure([])


def is_file(path, magic):
    return path.exists() and path.stat().st_size > 1000 and path.read_bytes()[:4] == magic


def fake_sweep(root):
    """Finished run directories with eval rows but no training (plots read only files)."""
    for enc in ("rope", "alibi"):
        for seed in SEEDS:
            cfg = dataclasses.replace(
                RunConfig(train=TrainConfig(train_length=4)), encoding=encodings.get(enc), seed=seed
            )
            run = runs.prepare(root / f"{enc}_{seed}", cfg)
            rows = [{"length": n, "token_accuracy": 0.5, "exact_match": 0.25} for n in LENGTHS]
            runs.write_jsonl(run / runs.EVAL, rows)
            runs.mark_done(run)


def test_cli_plot_heatmap_pdf_and_make_figures_script(tmp_path, capsys):
    fake_sweep(tmp_path / "sweep")
    pdf = tmp_path / "fig" / "heat.pdf"
    cli.main(["plot", str(tmp_path / "sweep"), "--out", str(pdf), "--kind", "heatmap"])
    assert is_file(pdf, b"%PDF") and "4 runs" in capsys.readouterr().out

    path = Path(__file__).resolve().parents[1] / "scripts" / "make_figures.py"
    spec = importlib.util.spec_from_file_location("make_figures", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    script.main([str(tmp_path / "sweep"), "--out", str(tmp_path / "figs")])
    written = sorted(p.name for p in (tmp_path / "figs").iterdir())
    assert written == sorted(
        f"{stem}_{metric}.{fmt}"
        for stem in ("extrapolation", "heatmap")
        for metric in ("token_accuracy", "exact_match")
        for fmt in ("png", "pdf")
    )
    for name in written:
        magic = b"\x89PNG" if name.endswith(".png") else b"%PDF"
        assert is_file(tmp_path / "figs" / name, magic), name
