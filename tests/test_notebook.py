"""examples/quickstart.ipynb runs top to bottom (at a handful of steps), and is committed with
its outputs stripped."""

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).parent.parent / "examples" / "quickstart.ipynb"


def test_notebook_is_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


def test_quickstart_notebook_runs_at_a_tiny_size(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    tiny = {
        r"^STEPS = .*": "STEPS = 10",
        r"^OUT = .*": f"OUT = {str(tmp_path / 'runs')!r}",
        r"^EVAL_LENGTHS = .*": "EVAL_LENGTHS = (8, 16)",  # 2 compiles of evaluation, not 4
    }
    for pattern, line in tiny.items():
        first.source, n = re.subn(pattern, line, first.source, flags=re.M)
        assert n == 1, f"the first code cell must set {line.split()[0]} (the test shrinks it)"
    # Run from the repository root so that the kernel imports this checkout's pe_research.
    root = str(NOTEBOOK.parent.parent)
    nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": root}}
    ).execute()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["rope", "sinusoidal"]
    text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "trained rope" in text and "norm before / after rotation" in text
