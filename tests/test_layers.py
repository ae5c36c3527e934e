"""The import layers of pyproject.toml ([tool.importlinter]) hold: nothing imports upward."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = "import sys; from importlinter import cli; sys.exit(cli.lint_imports(no_cache=True))"


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    """import-linter on the pe_research that `cwd` holds, with the contract in its pyproject.toml
    (a subprocess: the linter writes to the terminal it found at import)."""
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [sys.executable, "-c", LINT], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_no_module_imports_a_layer_above_its_own():
    result = lint_imports(ROOT)
    assert result.returncode == 0, (
        "An import crosses the layers declared in pyproject.toml ([tool.importlinter]): move the "
        "code to the layer where it belongs instead of importing upward (an import inside a "
        "function counts too).\n" + result.stdout + result.stderr
    )


def test_the_contract_catches_an_upward_import(tmp_path):
    """The same contract on a copy of the package with one upward import added must fail."""
    copy = tmp_path / "pe_research"
    shutil.copytree(ROOT / "pe_research", copy, ignore=shutil.ignore_patterns("__pycache__"))
    config = copy / "config.py"
    config.write_text(config.read_text() + "\nfrom pe_research.sweeps import summary  # noqa\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert "pe_research.config -> pe_research.sweeps.summary" in result.stdout


def test_no_module_of_the_package_imports_the_experiments():
    """pe_research.experiments (the top-level experiments/ folder) sits above sweeps: the library
    loads an experiment by name (importlib), never by an import the linter cannot see."""
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "pe_research").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if line.lstrip().startswith(
            ("import pe_research.experiments", "from pe_research.experiments")
        )
        or line.lstrip().startswith("from pe_research import experiments")
    ]
    assert not found, f"import of pe_research.experiments below it: {found}"
