"""The reproduction report: one markdown page that sets, for each paper an experiment reproduces,
its headline figure beside ours on the same axes, the protocol table, fit counts, seeds, the
scale run, and a one-line verdict naming the differences that remain, with when, from which
code and on which machine the runs were made.

    pe-research report RUNS_ROOT --out docs/

Every number comes from the run directories under RUNS_ROOT (the sweep folders
`RUNS_ROOT/<experiment>` and `RUNS_ROOT/<experiment>-<scale>`, as `pe-research sweep` names
them) through the experiment's own `paper_vs_here` and `headline` (its x axis is the evaluation
length unless the experiment names another in `HEADLINE_XLABEL`); the paper's numbers are the
experiment's cited data. Nothing is typed into the page. A sweep the page showed before whose
runs are gone from RUNS_ROOT keeps its section, marked as kept, with its own provenance.
`--keep-records` copies the records of the runs read (no checkpoints) beside the page, so that
the page and its runs can be committed together and the page written again from them.
"""

from __future__ import annotations

import datetime
import platform
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from pe_research import runs
from pe_research.runs import provenance
from pe_research.sweeps import experiments, plotting, summary, sweep

PAGE = "reproductions.md"
FIGURES = "reproductions"
RECORDS = "runs"  # OUT/FIGURES/RECORDS/<sweep folder>: the records behind the page (keep_records)
KEPT = (
    "Kept from the page written before: no finished runs of this sweep are under `{root}` now. "
    "Its numbers, figure and provenance are as they were then."
)
_KEPT_MARK = KEPT.split(":")[0]  # what a kept section's first line starts with
_WHERE = re.compile(r"^`experiments/([\w-]+)\.py`, `([\w-]+)` scale", re.MULTILINE)


def reproductions(folder: Path = Path("experiments")) -> list[tuple[str, ModuleType]]:
    """(name, module) of every experiment in `folder` that reproduces a paper (has PROTOCOL)."""
    out = []
    for path in experiments.experiment_files(folder):
        module = experiments.load_experiment(str(path))
        if getattr(module, "PROTOCOL", None) is not None:
            out.append((path.stem, module))
    return out


def scales(module: ModuleType) -> list[str]:
    """The experiment's scales, in its order (`cpu` alone where it defines none)."""
    return list(getattr(module, "SCALES", {"cpu": None}))


def sweeps(root: Path, name: str, module: ModuleType) -> Iterator[tuple[str, Path]]:
    """(scale, folder) of each sweep of the experiment found under `root`."""
    for scale in scales(module):
        names = [name, f"{name}-cpu"] if scale == "cpu" else [f"{name}-{scale}"]
        for folder in (root / n for n in names):
            if folder.is_dir():
                yield scale, folder


def current_runs(module: ModuleType, scale: str, folder: Path) -> tuple[list[Path], int]:
    """The finished run directories under `folder` of the configurations the experiment defines
    at `scale` now, and how many other finished runs the folder holds (configurations it no
    longer defines: an older protocol's runs, kept on disk)."""
    wanted = {sweep.run_dir_for(folder, cfg).resolve() for cfg in module.runs(scale)}
    finished = runs.finished_runs(folder)
    ours = [d for d in finished if d.resolve() in wanted]
    return ours, len(finished) - len(ours)


def provenance_lines(dirs: list[Path], rows: list[dict[str, Any]]) -> list[str]:
    """When the runs finished, from which code, on which machines."""
    days = sorted(when.date() for when in map(runs.finished_at, dirs) if when is not None)
    machines = sorted(
        {f"{v.get('platform', '?')} ({v.get('device', '?')})"
         for v in (runs.read_versions(d) for d in dirs)}
    )  # fmt: skip
    codes = sorted({r.get("code", "unknown") for r in rows})
    seeds = sorted({r["seed"] for r in rows})
    fit, judged = summary.fit_count(rows)
    when = f"{days[0]} to {days[-1]}" if days else "unknown"
    return [
        f"- Runs: {len({r['run'] for r in rows})} ({fit} of {judged} with a fit verdict fit), "
        f"seeds {', '.join(map(str, seeds))}; finished {when} (UTC).",
        f"- Code: {'; '.join(codes)}.",
        f"- Machine: {', '.join(machines)}.",
    ]


_VERDICT = re.compile(r"^Verdict: at the `[\w-]+` scale (\d+) of (\d+) runs fit;.*$", re.MULTILINE)
_TABLE = "\nProtocol of "


def verdict(module: ModuleType, scale: str, rows: list[dict[str, Any]]) -> str:
    """One line: fit counts and the protocol's remaining differences at this scale."""
    return _verdict(module, scale, *summary.fit_count(rows))


def _verdict(module: ModuleType, scale: str, fit: int, judged: int) -> str:
    differences = [f"{r.aspect} / {r.item}" for r in module.PROTOCOL.differences(scale)]
    return (
        f"Verdict: at the `{scale}` scale {fit} of {judged} runs fit; the numbers above differ "
        f"from the paper's protocol in: {', '.join(differences) or 'nothing'} (table below)."
    )


def section(
    name: str, module: ModuleType, scale: str, folder: Path, figures: Path
) -> tuple[str, list[Path], list[Path]]:
    """The markdown of one sweep, the figure it wrote, and the run directories it read: only the
    runs of the configurations the experiment defines now (others under `folder` are counted,
    not shown)."""
    dirs, others = current_runs(module, scale, folder)
    rows = summary.finished_rows(dirs)
    if not rows:
        return "", [], []
    protocol = module.PROTOCOL
    lines = [f"## {protocol.paper}", "", f"`experiments/{name}.py`, `{scale}` scale, runs in "
             f"`{folder}`.", "", *provenance_lines(dirs, rows)]  # fmt: skip
    if len(dirs) < (defined := len(module.runs(scale))):
        lines.append(
            f"- Partial: {len(dirs)} of the {defined} runs `experiments/{name}.py` defines at this "
            f"scale have finished; the others are not in these tables (`pe-research sweep {name}"
            f"{'' if scale == 'cpu' else f' --scale {scale}'}` runs them)."
        )
    if others:
        lines.append(
            f"- Left out: {others} finished run{'s' * (others != 1)} in `{folder}` of "
            f"configurations `experiments/{name}.py` no longer defines (an earlier protocol's)."
        )
    lines.append("")
    written = []
    if hasattr(module, "headline"):
        panels = {t: s for t, s in module.headline(rows).items() if s}
        if panels:
            path = figures / f"{name}-{scale}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            xlabel = getattr(module, "HEADLINE_XLABEL", "evaluation length")
            fig = plotting.headline_figure(panels, xlabel)
            fig.savefig(path, dpi=90, bbox_inches="tight")  # a legend wider than one panel
            written.append(path)
            lines += [f"![{name}, paper (dashed) vs here (solid)]({figures.name}/{path.name})", ""]
    if hasattr(module, "paper_vs_here"):
        lines += [module.paper_vs_here(rows), ""]
    lines += [verdict(module, scale, rows), "", protocol.markdown(ran=scale), ""]
    return "\n".join(lines), written, dirs


def earlier_sections(page: Path) -> dict[tuple[str, str], str]:
    """The sections of a page written before, by (experiment, scale); {} if there is none."""
    if not page.exists():
        return {}
    out = {}
    for chunk in re.split(r"^(?=## )", page.read_text(), flags=re.MULTILINE)[1:]:
        where = _WHERE.search(chunk)
        if where:
            out[(where[1], where[2])] = chunk.rstrip("\n")
    return out


def with_current_protocol(text: str, module: ModuleType, scale: str) -> str:
    """A section written before, its numbers as they were, with the protocol table and the
    verdict's list of differences as the experiment's code states them now: both are read from
    code, not from runs, so a protocol's corrected source or reason reaches every section."""
    head, found, _ = text.partition(_TABLE)
    if not found:
        return text
    head = _VERDICT.sub(lambda m: _verdict(module, scale, int(m[1]), int(m[2])), head)
    return f"{head.rstrip()}\n\n{module.PROTOCOL.markdown(ran=scale)}"


_RUNS = re.compile(r"^- Runs: (\d+) \(", re.MULTILINE)


def shows_current_runs(text: str, name: str, module: ModuleType, scale: str, root: Path) -> bool:
    """Whether an earlier section shows the runs the experiment defines now: it is not kept (its
    runs are under `root`) and as many of the current configurations' runs have finished in its
    sweep folder as it counts. A section whose experiment changed since (a new step cap, say)
    counts runs the code no longer defines: its protocol table must stay the one they ran."""
    count = _RUNS.search(text)
    if count is None or _KEPT_MARK in text:
        return False
    return any(
        len(current_runs(module, s, folder)[0]) == int(count[1])
        for s, folder in sweeps(root, name, module)
        if s == scale
    )


def _kept(text: str, root: Path) -> str:
    """An earlier section marked as kept (one mark, after its heading line)."""
    heading, _, body = text.partition("\n")
    body = "\n".join(x for x in body.split("\n") if not x.startswith(_KEPT_MARK)).lstrip("\n")
    return f"{heading}\n\n{KEPT.format(root=root)}\n\n{body}"


def write(
    root: Path,
    out: Path,
    folder: Path = Path("experiments"),
    only: Sequence[str] = (),
    keep_records: bool = False,
) -> list[Path]:
    """Write OUT/reproductions.md and its figures (OUT/reproductions/*.png) from the sweeps under
    `root`; returns the files written. ValueError if no reproduction has finished runs there.

    A sweep the page showed before whose runs are no longer under `root` (made on another
    machine, or their folder moved) keeps its section, marked as kept, so that reporting one new
    sweep does not erase the others; delete the page to start afresh. `only` (experiment names)
    reports those alone and leaves the numbers of every other section as they were, e.g. while
    another sweep under `root` is still running; their protocol tables and the differences their
    verdicts name are rewritten from the experiments' code (`with_current_protocol`) where the
    code still defines the runs they show (`shows_current_runs`). A kept section (runs made
    elsewhere), or one whose experiment has changed since, stays as it was written: its runs
    predate the code.

    `keep_records` also copies the record of every run a section reads (`runs.copy_records`: no
    checkpoints) to OUT/reproductions/runs/<sweep folder>/, so that the page can be committed
    with the runs behind it and written again from them (`pe-research report
    docs/reproductions/runs --out docs`), on a machine where the sweep's folder is gone."""
    root, out = Path(root), Path(out)
    figures = out / FIGURES
    earlier = earlier_sections(out / PAGE)
    papers = reproductions(folder)
    known = [n for n, _ in papers]
    if unknown := sorted(set(only) - set(known)):
        raise ValueError(
            f"--only {' '.join(unknown)}: not a reproduction in {folder}/; name one of: "
            f"{', '.join(known)}."
        )
    parts, written, fresh = [], [], False
    for name, module in papers:
        if only and name not in only:
            for s in scales(module):
                if (name, s) not in earlier:
                    continue
                text = earlier[(name, s)]
                current = shows_current_runs(text, name, module, s, root)
                parts.append(with_current_protocol(text, module, s) if current else text)
            continue
        found = {}
        for scale, sweep_folder in sweeps(root, name, module):
            text, paths, dirs = section(name, module, scale, sweep_folder, figures)
            if text:
                found.setdefault(scale, []).append(text)
                written += paths
                if keep_records:
                    records = figures / RECORDS / sweep_folder.name
                    runs.copy_records(dirs, sweep_folder, records)
                    written.append(records)
        for scale in scales(module):
            if scale in found:
                parts += found[scale]
                fresh = True
            elif (name, scale) in earlier:
                parts.append(_kept(earlier[(name, scale)], root))
    if not fresh:
        raise ValueError(
            f"No finished runs of {'/'.join(only) or 'a reproduction'} under {root}: run one "
            f"first (pe-research sweep EXPERIMENT; reproductions: {', '.join(known)}), or point "
            "RUNS_ROOT at the folder holding their sweep folders (runs/ by default)."
        )
    revision = provenance.source_revision()
    commit = revision.get("git_commit") or "unknown"
    head = [
        "# Reproductions",
        "",
        f"Written by `pe-research report {root} --out {out}"
        + (f" --only {' '.join(only)}" if only else "")
        + (" --keep-records" if keep_records else "")
        + "` on "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC at commit {commit[:12]}"
        + (" (with uncommitted changes)" if revision.get("git_dirty") else "")
        + f", on {platform.machine()} ({platform.system()}). Each section: the paper's headline "
        "figure beside ours (paper dashed, here solid), the comparison, a one-line verdict, and "
        "the protocol table (paper vs here, every difference with its reason).",
        "",
    ]
    out.mkdir(parents=True, exist_ok=True)
    page = out / PAGE
    # Sections read back from the page lost their trailing blank lines: one between each.
    runs.write_atomic(
        page, "\n".join(head) + "\n" + "\n\n".join(p.rstrip("\n") for p in parts) + "\n"
    )
    return [page, *written]
