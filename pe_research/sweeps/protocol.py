"""Protocol tables: how a reproduction runs a paper's experiment, beside how the paper ran it.

A `Protocol` is a list of `Row`s, one per item (model size, optimizer, alphabet, evaluation
lengths, what the published number averages, ...) under one of six aspects. Each row gives the
paper's choice with its source (a section, table, or file of the released code) and ours at every
scale of the experiment: `SAME` where it matches the paper, else what we do, and then `why` must
say why ("scaled down for 2 CPU cores" is a reason; "simpler" is not). A paper cell we could not
check against the paper's text from this machine is marked `verified=False` and rendered with †.

The table is written three ways from one definition: `markdown()` for the sweep's page and
docs/reproductions.md, `text()` for a terminal, and `differences(scale)` for the report's
one-line verdict.
"""

from __future__ import annotations

import dataclasses
import textwrap

ASPECTS = ("model", "optimisation", "data", "positions", "evaluation", "aggregation")
SAME = "same"
"""A scale's cell that matches the paper."""
UNVERIFIED = (
    "†: cited from the paper as we read it; not checked against its text from this machine "
    "(no copy of the paper here): check it before a paper-scale run."
)


@dataclasses.dataclass(frozen=True)
class Row:
    """One item of a protocol: the paper's choice, its source, and ours per scale."""

    aspect: str
    item: str
    paper: str
    source: str
    here: tuple[tuple[str, str], ...]
    """(scale, what we do) for every scale of the protocol; SAME where it matches the paper."""
    why: str = ""
    """Why some scale differs from the paper (required then, empty otherwise)."""
    verified: bool = True

    def cell(self, scale: str) -> str:
        return dict(self.here)[scale]

    def differs(self, scale: str) -> bool:
        return self.cell(scale) != SAME


def row(
    aspect: str,
    item: str,
    theirs: str,
    source: str,
    /,
    *,
    why: str = "",
    verified: bool = True,
    **here: str,
) -> Row:
    """A Row: the paper's choice (`theirs`) and its source, then ours per scale as keyword
    arguments in the protocol's scale order: row(..., cpu="4 layers", paper=SAME)."""
    return Row(aspect, item, theirs, source, tuple(here.items()), why, verified)


@dataclasses.dataclass(frozen=True)
class Protocol:
    """A paper's protocol beside ours at each scale of the experiment that reproduces it."""

    paper: str
    """The paper, as cited: authors, year, title, arXiv id."""
    scales: tuple[str, ...]
    rows: tuple[Row, ...]

    def check(self) -> None:
        """ValueError naming the first row that breaks the rules: a known aspect, every aspect
        covered, a source for every paper cell, a cell for every scale, a reason for (and only
        for) every difference."""
        covered = {r.aspect for r in self.rows}
        if missing := [a for a in ASPECTS if a not in covered]:
            raise ValueError(f"protocol of {self.paper}: no row for aspect(s) {missing}.")
        for r in self.rows:
            where = f"protocol of {self.paper}, {r.aspect} / {r.item}"
            if r.aspect not in ASPECTS:
                raise ValueError(f"{where}: unknown aspect; use one of {ASPECTS}.")
            if not r.source.strip():
                raise ValueError(f"{where}: the paper's cell needs a source.")
            if [s for s, _ in r.here] != list(self.scales):
                raise ValueError(f"{where}: give one cell per scale, in order {self.scales}.")
            differs = any(r.differs(s) for s in self.scales)
            if differs and not r.why.strip():
                raise ValueError(f"{where}: differs from the paper but says not why.")
            if not differs and r.why:
                raise ValueError(f"{where}: matches the paper at every scale; drop its `why`.")

    def differences(self, scale: str) -> list[Row]:
        """The rows where `scale` does not do what the paper did."""
        return [r for r in self.rows if r.differs(scale)]

    def markdown(self, ran: str | None = None) -> str:
        """A markdown table; `ran` names the scale of the runs it accompanies."""
        head = ["aspect", "item", "paper", "source", *(f"here: {s}" for s in self.scales), "why"]
        lines = [
            f"Protocol of {self.paper}, paper vs here"
            + (f" (these runs: the `{ran}` scale)" if ran else "")
            + f"; `{SAME}`: as the paper.",
            "",
            "| " + " | ".join(head) + " |",
            "|" + "---|" * len(head),
        ]
        for r in self.rows:
            paper = r.paper + ("†" if not r.verified else "")
            cells = [r.aspect, r.item, paper, r.source, *(r.cell(s) for s in self.scales), r.why]
            lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
        if any(not r.verified for r in self.rows):
            lines += ["", UNVERIFIED]
        return "\n".join(lines) + "\n"

    def text(self, width: int = 96) -> str:
        """The same table as wrapped paragraphs, for a docstring (one per row)."""
        out = [f"Protocol, paper vs here ({', '.join(self.scales)} scales; {SAME}: as the paper):"]
        for r in self.rows:
            mark = "†" if not r.verified else ""
            groups: dict[str, list[str]] = {}
            for scale in self.scales:  # scales with the same cell share it
                groups.setdefault(r.cell(scale), []).append(scale)
            here = "; ".join(f"{', '.join(names)}: {cell}" for cell, names in groups.items())
            body = f"{r.aspect} / {r.item}. Paper: {r.paper}{mark} [{r.source}]. Here: {here}."
            if r.why:
                body += f" Why: {r.why}"
            out.append(textwrap.fill(body, width, initial_indent="- ", subsequent_indent="  "))
        if any(not r.verified for r in self.rows):
            out.append(textwrap.fill(UNVERIFIED, width))
        return "\n".join(out) + "\n"


def normalized(text: str) -> str:
    """`text` with every run of whitespace made one space (to find a phrase in wrapped text)."""
    return " ".join(text.split())
