"""`pe-research report`: every page from the results tables alone (runs are made up here, without
training), and `--check`, which says where a page differs from what the tables give."""

import re
import textwrap

import pytest

from pe_research import cli, results, runs, train
from pe_research.sweeps import pages, report, sweep

TINY_REPRODUCTION = '''
"""A tiny reproduction, for the report's tests.

    pe-research sweep tiny
"""
from pe_research import encodings, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.sweeps import summary
from pe_research.sweeps.protocol import ASPECTS, SAME, Protocol, row

SCALES = {"cpu": None}
PROTOCOL = Protocol("Tiny et al. 2099", ("cpu",), tuple(
    row(a, "item", "theirs", "their file", cpu="ours" if a == "model" else SAME,
        why="smaller" if a == "model" else "") for a in ASPECTS))
PAPER = {("copy", "nope"): 0.25, ("copy", "rope"): 0.5}

def runs(scale="cpu"):
    return [RunConfig(task=tasks.get("copy"), encoding=encodings.get(e),
                      model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
                      train=TrainConfig(steps=4, batch_size=4, train_length=3, log_every=1),
                      eval=EvalConfig(lengths=(3, 6), batch_size=4), seed=s)
            for e in ("nope", "rope") for s in (0, 1)]

def paper_vs_here(rows):
    return summary.published_table(rows, PAPER, metric="exact_match", lengths=(6,),
                                   source="Tiny et al.")

def headline(rows):
    ours = {}
    for r in rows:
        ours.setdefault(r["encoding"], {}).setdefault(r["length"], []).append(r["exact_match"])
    series = [(e, [6], [v], True) for (_, e), v in PAPER.items()]
    series += [(e, sorted(v), [sum(v[n]) / len(v[n]) for n in sorted(v)], False)
               for e, v in ours.items()]
    return {"copy": series}
'''

README = "# A project\n\nIntro.\n\n<!-- results: begin -->\nold\n<!-- results: end -->\n\nMore.\n"


def made_up_training(cfgs, run_dirs, **_):
    """Stands in for train.train_group: RoPE learns copy (exact match 1 at length 3), NoPE not."""
    for cfg, run_dir in zip(cfgs, run_dirs, strict=True):
        runs.prepare(run_dir, cfg, overwrite=True)
        fit = cfg.encoding.name == "rope"
        rows = [
            {"length": n, "token_accuracy": 0.9, "loss": 0.1,
             "exact_match": (1.0 if fit else 0.5) if n == 3 else 0.25 + 0.125 * cfg.seed}
            for n in cfg.eval_lengths
        ]  # fmt: skip
        runs.write_jsonl(run_dir / runs.EVAL, rows)
        runs.mark_done(run_dir)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder with the tiny reproduction in ./experiments, its sweep's table in
    docs/results/tiny, and a README with a results block."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(train, "train_group", made_up_training)
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments/tiny.py").write_text(textwrap.dedent(TINY_REPRODUCTION))
    (tmp_path / "README.md").write_text(README)
    sweep.run_experiment("tiny", tmp_path / "runs/tiny", results_dir=tmp_path / "docs/results/tiny",
                         progress=False)  # fmt: skip
    return tmp_path


def write(project):
    return report.write(project / "docs/results", project / "docs", project / "README.md")


def test_every_page_comes_from_the_tables_alone(project):
    written = write(project)
    docs = project / "docs"
    assert docs / "results/tiny/summary.md" in written
    assert (docs / "reproductions/tiny-cpu.png").read_bytes()[:4] == b"\x89PNG"
    page = (docs / report.REPRODUCTIONS).read_text()
    assert "## Tiny et al. 2099" in page and "(reproductions/tiny-cpu.png)" in page
    assert "- Runs: 4 (2 of 4 with a fit verdict fit), seeds 0, 1;" in page
    assert "differ from the paper's protocol in: model / item" in page
    assert "| model | item | theirs | their file | ours | smaller |" in page
    assert "[its page](results/tiny/summary.md)" in page
    readme = (project / "README.md").read_text()
    assert readme.startswith("# A project\n\nIntro.\n\n<!-- results: begin -->\n")
    assert readme.endswith("<!-- results: end -->\n\nMore.\n") and "\nold\n" not in readme
    assert re.search(
        r"\| Tiny et al. 2099 \| \[`tiny`\]\(docs/results/tiny/summary.md\) \| cpu +\| 4 +\| 2 +\|",
        readme,
    )
    assert report.check(docs / "results", docs, project / "README.md") == []

    # The run folders are gone: the same tables give the same pages.
    before = {p: p.read_text() for p in written if p.suffix == ".md"}
    for path in (project / "runs").rglob("*"):
        if path.is_file():
            path.unlink()
    write(project)
    assert {p: p.read_text() for p in before} == before

    # The numbers are the table's: change one, and --check says where; the report follows.
    tables = results.read(docs / "results/tiny")
    frame = tables.results
    nope0 = (frame["encoding"] == "nope") & (frame["seed"] == 0) & (frame["length"] == 6)
    frame.loc[nope0, "exact_match"] = 0.875
    results.write(docs / "results/tiny", results.Tables(frame, tables.curves))
    differences = report.check(docs / "results", docs, project / "README.md")
    assert any(d.startswith(f"{docs / report.REPRODUCTIONS}:") for d in differences)
    write(project)
    page = (docs / report.REPRODUCTIONS).read_text()
    assert "| copy | nope     | 0.25  | 0.625 [0.375, 0.875]" in page


def test_check_names_the_first_line_that_differs_and_the_cli_fails(project, capsys):
    write(project)
    page = project / "docs/results/tiny/summary.md"
    lines = page.read_text().splitlines()
    lines[6] = "typed by hand"
    page.write_text("\n".join(lines) + "\n")
    (message,) = report.check(project / "docs/results", project / "docs", project / "README.md")
    assert message.startswith(f"{page}:7: is 'typed by hand', the tables give ")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["report", "--check"])
    assert exit_info.value.code == 1 and "typed by hand" in capsys.readouterr().err
    cli.main(["report"])
    cli.main(["report", "--check"])
    assert "Every page is as the tables give it." in capsys.readouterr().out

    (project / "README.md").write_text("# No block\n")
    with pytest.raises(ValueError, match="has no results block: put the lines <!-- results: begin"):
        write(project)


def test_the_pages_leave_out_runs_of_configurations_the_experiment_no_longer_defines(project):
    write(project)
    page = project / "docs/results/tiny/summary.md"
    assert "- Runs: 4 (" in page.read_text() and "Left out" not in page.read_text()
    # The protocol changes: rope's runs now train one step longer, under new ids.
    experiment = project / "experiments/tiny.py"
    experiment.write_text(experiment.read_text().replace(
        "train=TrainConfig(steps=4,", "train=TrainConfig(steps=4 + (e == 'rope'),"
    ))  # fmt: skip
    write(project)
    text = page.read_text()
    assert "- Runs: 2 (" in text and "- Left out: 2 runs in the table of configurations" in text
    assert "- Partial: 2 of the 4 runs the experiment defines at this scale" in text
    reproductions = (project / "docs" / report.REPRODUCTIONS).read_text()
    assert "| copy | rope     | 0.50  | not run" in reproductions


def test_a_table_whose_runs_span_two_commits_is_refused_naming_both(project, capsys):
    write(project)
    folder = project / "docs/results/tiny"
    assert list(folder.glob("*.png"))
    tables = results.read(folder)
    frame = tables.results
    (here,) = set(frame["commit"])
    older = "0123456789abcdef0123456789abcdef01234567"
    frame.loc[frame["encoding"] == "nope", "commit"] = older
    results.write(folder, results.Tables(frame, tables.curves))

    cli.main(["report"])
    err = capsys.readouterr().err
    page = (folder / "summary.md").read_text()
    named = ["span 2 commits of the code", f"{here[:12]} (2 runs)", f"{older[:12]} (2 runs)"]
    for text in (err, page, (project / "docs" / report.REPRODUCTIONS).read_text()):
        assert all(n in text for n in named) and "docs/results/tiny-rerun" in text
    assert "| copy" not in page and not list(folder.glob("*.png")), "no number, no figure"
    assert re.search(r"\| cpu +\| 4 +\| not published: 2 commits \|",
                     (project / "README.md").read_text())  # fmt: skip
    cli.main(["report", "--check"])  # the refusal is the page the tables give

    frame["commit"] = here  # one commit again: the page is back
    results.write(folder, results.Tables(frame, tables.curves))
    write(project)
    assert "- Runs: 4 (2 of 4 with a fit verdict fit)" in (folder / "summary.md").read_text()


def test_without_tables_the_report_says_how_to_make_them(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="No results tables under .*--results"):
        report.write(tmp_path / "empty", tmp_path)
    with pytest.raises(FileNotFoundError, match="is not a folder of results tables"):
        report.write(tmp_path / "missing", tmp_path)


def test_a_sweep_page_embeds_its_figures(project):
    text = pages.sweep_page(pages.read_sweep(project / "docs/results/tiny"))
    assert "![token_accuracy by evaluation length](extrapolation_token_accuracy.png)" in text
    assert "![heatmap_token_accuracy](heatmap_token_accuracy.png)" in text
    assert "`pe-research sweep tiny --results" in text
