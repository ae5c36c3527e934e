"""The accelerator check's scripts, on CPU: installing carried wheels (scripts/device_check.sh)
and one tiny pass of every section of scripts/device_check.py."""

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from pe_research.sweeps import experiments

ROOT = Path(__file__).resolve().parents[1]


def _env(**changes: str) -> dict[str, str]:
    # `python3` in the scripts must be this interpreter (it has pip and pe_research).
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return {**os.environ, "PATH": path, "OUT": "", **changes}


def _wheel(folder: Path) -> Path:
    """A minimal valid wheel of a package `demo_pkg`, made by hand."""
    dist = "demo_pkg-0.1.dist-info"
    files = {
        "demo_pkg/__init__.py": "VALUE = 1\n",
        f"{dist}/METADATA": "Metadata-Version: 2.1\nName: demo_pkg\nVersion: 0.1\n",
        f"{dist}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    path = folder / "demo_pkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def _install_only(wheels: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "scripts/device_check.sh", "--install-only"],
        cwd=ROOT,
        env=_env(WHEELS=str(wheels), SITE=str(site), IMPORTS="demo_pkg"),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_install_only_puts_the_wheels_in_site_and_imports_them(tmp_path):
    (tmp_path / "wheels").mkdir()
    _wheel(tmp_path / "wheels")
    done = _install_only(tmp_path / "wheels", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "demo_pkg" / "__init__.py").exists()
    assert "imported demo_pkg" in done.stdout


def test_install_only_without_wheels_says_how_to_make_them(tmp_path):
    (tmp_path / "empty").mkdir()
    done = _install_only(tmp_path / "empty", tmp_path / "site")
    assert done.returncode == 2
    assert "no wheels in" in done.stderr and "scripts/device_wheels.sh" in done.stderr


def test_device_check_writes_every_section_on_cpu(tmp_path):
    args = ["--tiny", "--workloads", "default", "--dtypes", "float32", "--batch-multipliers", "1"]
    args += ["--steps", "1", "--repeats", "1", "--ks", "1", "2", "--peak-n", "256"]
    # The sweep is started and stopped at its timeout: the timeout path, in a second.
    args += ["--sweep-timeout", "1", "--sweep-out", str(tmp_path / "sweep")]
    done = subprocess.run(
        [sys.executable, "scripts/device_check.py", "--out", str(tmp_path / "out"), *args],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((tmp_path / "out" / "device_check.json").read_text())
    assert data["status"] == "complete" and data["skipped"] == []
    [row] = data["workloads"]
    assert (row["workload"], row["dtype"], row["batch_size"]) == ("default", "float32", 8)
    assert row["tokens_per_s"] > 0
    assert [r["models"] for r in data["packed"]["rows"]] == [1, 2]
    assert data["packed"]["stopped"] is None and data["packed"]["rows"][0]["vs_one_by_one"] == 1
    sweep = data["sweep"]
    assert sweep["timed_out"] and not sweep["finished"]
    module = experiments.load_experiment(str(ROOT / "experiments" / "prope.py"))
    assert sweep["runs_total"] == len(experiments.experiment_runs(module, "gpu"))
    assert "sweep prope --scale gpu" in sweep["command"]
    assert "of fp32 peak" in done.stdout
