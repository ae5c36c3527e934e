"""scripts/tier_tests.py writes the slow tier from JUnit timings; with --add a timed run of the
fast tier alone adds its slow tests and keeps the tier's others."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def junit(path, times):
    case = '<testcase classname="tests.test_x" name="{}" time="{}"/>'
    cases = "".join(case.format(name, t) for name, t in times.items())
    path.write_text(f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>')
    return path


def run(monkeypatch, out, *args):
    spec = importlib.util.spec_from_file_location("tier_tests", ROOT / "scripts" / "tier_tests.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "OUT", out)
    monkeypatch.setattr(sys, "argv", ["tier_tests.py", *map(str, args)])
    module.main()
    return [x for x in out.read_text().splitlines() if not x.startswith("#")]


def test_add_keeps_the_slow_tier_and_adds_the_new_slow_tests(tmp_path, monkeypatch):
    out = tmp_path / "slow_tests.txt"
    whole = junit(tmp_path / "whole.xml", {"test_a": 5.0, "test_b": 0.1, "test_c": 4.0})
    assert run(monkeypatch, out, whole, "--threshold", 2) == [
        "tests/test_x.py::test_a",
        "tests/test_x.py::test_c",
    ]
    # The fast tier alone: test_a and test_c did not run; test_d is new and slow, test_e fast.
    fast = junit(tmp_path / "fast.xml", {"test_b": 0.1, "test_d": 3.0, "test_e": 0.5})
    assert run(monkeypatch, out, fast, "--threshold", 2, "--add") == [
        "tests/test_x.py::test_a",
        "tests/test_x.py::test_c",
        "tests/test_x.py::test_d",
    ]
    assert "# --add: kept the 2 tests of the earlier slow tier." in out.read_text()
    assert "the 2 others took 1 s" in out.read_text()
    # Without --add the file holds this run's slow tests alone.
    assert run(monkeypatch, out, fast, "--threshold", 2) == ["tests/test_x.py::test_d"]
