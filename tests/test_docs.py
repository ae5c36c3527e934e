"""The repository's pages: every generated page is what the committed tables give, and every
relative link of a hand-written page points at a file that exists."""

import re
from pathlib import Path

from pe_research.sweeps import report

ROOT = Path(__file__).resolve().parents[1]


def test_the_generated_pages_and_readme_block_are_what_the_committed_tables_give(monkeypatch):
    monkeypatch.chdir(ROOT)  # the pages give commands run from the repository's root
    differences = report.check(ROOT / "docs/results", ROOT / "docs", ROOT / "README.md")
    assert not differences, (
        "A generated page differs from what its results table gives (typed by hand, or the page "
        "code changed): run `pe-research report` and commit the pages.\n" + "\n".join(differences)
    )


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_relative_links_of_the_pages_point_at_files_that_exist():
    pages = [ROOT / "README.md", ROOT / "benchmarks/README.md", *(ROOT / "docs").rglob("*.md")]
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in pages
        for target in LINK.findall(page.read_text())
        if "://" not in target and not (page.parent / target).exists()
    ]
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)
