"""The package as installed: every folder of pe_research/ and the experiments are in it, and an
installed copy runs an experiment by name from any folder."""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_list_holds_every_folder_of_the_package_and_the_experiments():
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = [
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "pe_research").rglob("__init__.py")
    ]
    assert sorted(listed) == sorted([*found, "pe_research.experiments"]), (
        "pyproject.toml [tool.setuptools] packages must list every package folder (a new one is "
        "left out of the wheel otherwise)"
    )
    assert (ROOT / "experiments" / "__init__.py").exists()


@pytest.mark.slow
def test_an_installed_copy_finds_the_experiments_by_name_from_an_empty_folder(tmp_path):
    wheels, site, empty = tmp_path / "wheels", tmp_path / "site", tmp_path / "empty"
    empty.mkdir()
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", wheels, ROOT], check=True, timeout=600)
    (wheel,) = wheels.glob("pe_research-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", site, wheel], check=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(site), "PE_RESEARCH_JAX_CACHE": ""}

    def run(*args):
        return subprocess.run(
            [sys.executable, *args], cwd=empty, env=env, capture_output=True, text=True, timeout=300
        )

    where = run("-c", "import pe_research.experiments.default as d; print(d.__file__)")
    assert where.stdout.strip().startswith(str(site)), where.stderr
    swept = run("-m", "pe_research.cli", "sweep", "default", "--tables-only")
    assert swept.returncode == 0, swept.stderr
    assert "No run of the 10 is finished yet" in swept.stdout
    unknown = run("-m", "pe_research.cli", "sweep", "defualt")
    assert unknown.returncode == 2 and "Known experiments: addition, " in unknown.stderr
