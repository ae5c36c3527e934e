"""`pe-research report`: every generated page, from the committed results tables alone.

    pe-research report [--results docs/results] [--docs docs] [--readme README.md] [--check]

For every folder under RESULTS that holds a results table (results.parquet): its summary.md and
figures. Then DOCS/reproductions.md, with one section for each paper an experiment reproduces
(its headline figure beside ours, the comparison, a verdict and the protocol table), the index of
sweeps in DOCS/experiments.md and the results block of the README, each between two marker
lines. `--check` writes nothing and names each
page that differs from what the tables give, with its first differing line (figures are not
compared: fonts differ between machines).
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

from matplotlib.figure import Figure

from pe_research import results, runs
from pe_research.sweeps import experiments, leaderboard, pages, plotting, summary
from pe_research.sweeps.pages import Sweep

REPRODUCTIONS = "reproductions.md"
FIGURES = "reproductions"  # DOCS/FIGURES/<experiment>-<scale>.png: the headline figures
README_BEGIN = "<!-- results: begin -->"
README_END = "<!-- results: end -->"
INDEX = "experiments.md"  # DOCS/INDEX holds the results index between the two lines below
INDEX_BEGIN = "<!-- results index: begin -->"
INDEX_END = "<!-- results index: end -->"
MAIN_JOB = "default"
LEADERBOARD = "leaderboard"


def read_sweeps(root: Path) -> list[Sweep]:
    """Every sweep whose table is in a folder of `root`, by folder name."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(
            f"{root} is not a folder of results tables: give the folder whose subfolders hold "
            "results.parquet (docs/results in the repository)."
        )
    folders = sorted(p.parent for p in root.glob(f"*/{results.RESULTS}"))
    if not folders:
        raise ValueError(
            f"No results tables under {root}: a sweep writes one with `pe-research sweep "
            f"EXPERIMENT --results {root}/EXPERIMENT`."
        )
    return [pages.read_sweep(folder) for folder in folders]


def _reproductions(sweeps: list[Sweep]) -> list[Sweep]:
    return [s for s in sweeps if getattr(s.module, "PROTOCOL", None) is not None]


def verdict(sweep: Sweep) -> str:
    """One line: fit counts and the protocol's remaining differences at this scale."""
    fit, judged = summary.fit_count(sweep.rows)
    rows = sweep.module.PROTOCOL.differences(sweep.scale)
    differences = ", ".join(f"{r.aspect} / {r.item}" for r in rows) or "nothing"
    return (
        f"Verdict: at the `{sweep.scale}` scale {fit} of {judged} runs fit; the numbers above "
        f"differ from the paper's protocol in: {differences} (table below)."
    )


def reproductions_page(
    sweeps: list[Sweep], docs: Path, draw: bool = True
) -> tuple[str, dict[str, Figure]]:
    """DOCS/reproductions.md and, if `draw`, its headline figures (by file name under
    DOCS/reproductions)."""
    lines = [
        pages.GENERATED,
        "",
        "# Reproductions",
        "",
        "Each section: the paper's headline figure beside ours (paper dashed, here solid), the "
        "comparison, a one-line verdict, and the protocol table (paper vs here, every "
        "difference with its reason). Every number comes from the results table linked.",
        "",
    ]
    figures: dict[str, Figure] = {}
    for sweep in _reproductions(sweeps):
        module, rows = sweep.module, sweep.rows
        table = _relative(sweep.folder / pages.PAGE, docs)
        lines += [f"## {module.PROTOCOL.paper}", ""]
        lines += [f"`{sweep.experiment}`, `{sweep.scale}` scale: [its page]({table}).", ""]
        lines += [*pages.provenance(sweep), ""]
        if not rows or sweep.refused:
            lines += [module.PROTOCOL.markdown(ran=sweep.scale), ""]
            continue
        if hasattr(module, "headline"):
            panels = {t: s for t, s in module.headline(rows).items() if s}
            if panels:
                name = f"{sweep.experiment}-{sweep.scale}.png"
                xlabel = getattr(module, "HEADLINE_XLABEL", "evaluation length")
                if draw:
                    figures[name] = plotting.headline_figure(panels, xlabel)
                alt = f"{sweep.experiment}, paper (dashed) vs here (solid)"
                lines += [f"![{alt}]({FIGURES}/{name})", ""]
        if hasattr(module, "paper_vs_here"):
            lines += [module.paper_vs_here(rows), ""]
        lines += [verdict(sweep), "", module.PROTOCOL.markdown(ran=sweep.scale), ""]
    return "\n".join(lines).rstrip("\n") + "\n", figures


def _relative(path: Path, start: Path) -> str:
    """`path` relative to the folder `start`, with forward slashes (a link in markdown)."""
    return Path(os.path.relpath(path, start)).as_posix()


# -- the README's block -----------------------------------------------------------------------


def readme_block(sweeps: list[Sweep], readme_dir: Path) -> str:
    """The README's results block: the main job's table, the leaderboard's best encoding per
    task, and one line per reproduction, each linking to its page."""
    by_name = {(s.experiment, s.scale): s for s in sweeps}
    parts = [f"{README_BEGIN}\n{pages.GENERATED}"]
    if (main := by_name.get((MAIN_JOB, "cpu"))) is not None and main.refused:
        parts.append(f"### The main job\n\nNot published: {main.refused}")
    elif main is not None:
        page = _relative(main.folder / pages.PAGE, readme_dir)
        parts.append(
            f"### The main job\n\n{main.metric} at 2x / 8x the training length, mean over the "
            "seeds that fit; unfit: the run did not learn its task (its exact match at the "
            f"training length):\n\n{summary.glance_table(main.rows, main.metric)}\n\n"
            f"{_short_provenance(main)} Tables and figures: [{page}]({page})."
        )
    if (board := by_name.get((LEADERBOARD, "cpu"))) is not None and board.refused:
        parts.append(f"### Every encoding on every task\n\nNot published: {board.refused}")
    elif board is not None:
        page = _relative(board.folder / pages.PAGE, readme_dir)
        parts.append(
            "### Every encoding on every task\n\n"
            f"{leaderboard.best_per_task(board.rows).rstrip()}\n\n"
            f"{_short_provenance(board)} The whole table: [{page}]({page})."
        )
    if reproduced := _reproductions(sweeps):
        body = []
        for s in reproduced:
            fit, judged = summary.fit_count(s.rows)
            table = _relative(s.folder / pages.PAGE, readme_dir)
            ran = len(s.tables.run_ids)
            runs_text = f"{ran}" if s.defined in (None, ran) else f"{ran} of {s.defined}"
            fit_text = _refused_short(s) or str(fit)
            body.append([_cited(s.module.PROTOCOL.paper), f"[`{s.experiment}`]({table})",
                         s.scale, runs_text, fit_text])  # fmt: skip
        header = ["paper", "experiment", "scale", "runs", "fit"]
        page = _relative(Path(reproduced[0].folder).parents[1] / REPRODUCTIONS, readme_dir)
        parts.append(
            "### Published results beside ours\n\n"
            + "\n".join(summary.markdown_table(header, body))
            + f"\n\nEach paper's figure beside ours, and the protocol: [{page}]({page})."
        )
    return "\n\n".join([*parts, README_END])


def _cited(paper: str) -> str:
    """ "Authors year", linked to the paper's arXiv page where the citation names one."""
    who = paper.split(",")[0]
    found = re.search(r"arXiv (\d{4}\.\d{4,5})", paper)
    return f"[{who}](https://arxiv.org/abs/{found[1]})" if found else who


def _refused_short(sweep: Sweep) -> str:
    """'' for a published sweep; else a cell saying it is not, and why in a few words."""
    if not sweep.refused:
        return ""
    return f"not published: {len(results.commits(sweep.tables.results))} commits"


def _short_provenance(sweep: Sweep) -> str:
    per_run = sweep.tables.results.drop_duplicates("run")
    if per_run.empty:
        return "No run of the configurations the experiment defines now."
    fit, judged = summary.fit_count(sweep.rows)
    days = sorted(str(d)[:10] for d in per_run["finished"].dropna())
    when = days[0] if days[0] == days[-1] else f"{days[0]} to {days[-1]}"
    codes = results.code_versions(sweep.tables.results)
    code = codes[0] if len(codes) == 1 else f"{len(codes)} code versions"
    return f"{fit} of {judged} runs fit; {code}; finished {when}."


def results_index(sweeps: list[Sweep], docs: Path) -> str:
    """DOCS/experiments.md's index: each sweep with a table (runs, fit, its page), then every
    experiment without one and the command that makes it."""
    body = []
    for s in sorted(sweeps, key=lambda s: (s.experiment, s.scale)):
        fit, judged = summary.fit_count(s.rows)
        page = _relative(s.folder / pages.PAGE, docs)
        ran = len(s.tables.run_ids)
        runs_text = f"{ran}" if s.defined in (None, ran) else f"{ran} of {s.defined}"
        fit_text = _refused_short(s) or f"{fit} of {judged}"
        body.append([f"`{s.experiment}`", s.scale, runs_text, fit_text,
                     f"[{page}]({page})"])  # fmt: skip
    swept = {s.experiment for s in sweeps}
    for name in experiments.names():
        if name not in swept:
            folder = _relative(docs / "results" / name, docs.parent)
            command = f"not run yet: `pe-research sweep {name} --results {folder}`"
            body.append([f"`{name}`", "-", "-", "-", command])
    header = ["experiment", "scale", "runs", "fit", "page"]
    table = "\n".join(summary.markdown_table(header, body))
    return f"{INDEX_BEGIN}\n{pages.GENERATED}\n\n{table}\n{INDEX_END}"


def with_block(text: str, block: str, where: Path, begin=README_BEGIN, end=README_END) -> str:
    """`text` with the part between the lines `begin` and `end` (inclusive) replaced by
    `block`."""
    first, last = text.find(begin), text.find(end)
    if first < 0 or last < first:
        raise ValueError(
            f"{where} has no results block: put the lines {begin} and {end} where "
            "`pe-research report` should write it."
        )
    return text[:first] + block + text[last + len(end) :]


# -- writing and checking ---------------------------------------------------------------------


def _texts(
    sweeps: list[Sweep], docs: Path, readme: Path | None, draw: bool = True
) -> tuple[dict[Path, str], dict[Path, Figure]]:
    """Every page's text and, if `draw`, every figure, by the path each is written to."""
    texts: dict[Path, str] = {}
    figures: dict[Path, Figure] = {}
    for sweep in sweeps:
        texts[sweep.folder / pages.PAGE] = pages.sweep_page(sweep)
        if draw:
            drawn = pages.figures(sweep).items()
            figures |= {sweep.folder / f"{stem}.png": fig for stem, fig in drawn}
    if _reproductions(sweeps):
        page, drawn = reproductions_page(sweeps, docs, draw)
        texts[docs / REPRODUCTIONS] = page
        figures |= {docs / FIGURES / name: fig for name, fig in drawn.items()}
    if readme is not None:
        current = readme.read_text() if readme.exists() else ""
        texts[readme] = with_block(current, readme_block(sweeps, readme.parent), readme)
    index = docs / INDEX
    if index.exists() and INDEX_BEGIN in (current := index.read_text()):
        texts[index] = with_block(current, results_index(sweeps, docs), index, INDEX_BEGIN,
                                  INDEX_END)  # fmt: skip
    return texts, figures


def write(
    root: Path = Path("docs/results"), docs: Path = Path("docs"), readme: Path | None = None
) -> list[Path]:
    """Write every page and figure from the tables under `root`; returns the files written."""
    sweeps = read_sweeps(root)
    texts, figures = _texts(sweeps, Path(docs), readme)
    for path, fig in figures.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        plotting.save(fig, path, dpi=pages.DPI)
    # Every PNG of a sweep's folder and of DOCS/reproductions is generated: what no page shows
    # any more (a protocol whose runs are gone) goes.
    for folder in [s.folder for s in sweeps] + [Path(docs) / FIGURES]:
        for stale in set(folder.glob("*.png")) - set(figures):
            stale.unlink()
    for path, text in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        runs.write_atomic(path, text)
    return [*texts, *figures]


def refusals(root: Path = Path("docs/results")) -> list[str]:
    """One line per sweep under `root` whose page is refused, and why."""
    return [f"{s.folder}: not published: {s.refused}" for s in read_sweeps(root) if s.refused]


def check(
    root: Path = Path("docs/results"), docs: Path = Path("docs"), readme: Path | None = None
) -> list[str]:
    """One message per page that differs from what the tables under `root` give (missing, or
    its first differing line); [] when every page is as generated. Draws no figure."""
    texts, _ = _texts(read_sweeps(root), Path(docs), readme, draw=False)
    return [m for path, text in texts.items() if (m := difference(path, text))]


def difference(path: Path, want: str) -> str:
    """'' if `path` holds `want`, else what differs first."""
    if not path.exists():
        return f"{path}: missing (run `pe-research report` to write it)."
    have = path.read_text()
    if have == want:
        return ""
    for i, (a, b) in enumerate(zip(have.splitlines(), want.splitlines(), strict=False), 1):
        if a != b:
            return f"{path}:{i}: is {a!r}, the tables give {b!r}."
    diff = list(difflib.unified_diff(have.splitlines(), want.splitlines(), lineterm="", n=0))
    return f"{path}: differs in length from what the tables give: {' '.join(diff[2:4])}"
