"""Write tests/slow_tests.txt, the slow tier, from a timed run of the whole suite.

    python -m pytest -m "" --junitxml=timed.xml      # every test, both tiers
    python -m pytest --junitxml=fast.xml                 # the fast tier alone
    python scripts/tier_tests.py timed.xml fast.xml [--threshold 3]

After adding tests, a timed run of the fast tier alone is enough (2 min instead of 20):

    python -m pytest --junitxml=fast.xml
    python scripts/tier_tests.py fast.xml --add        # keeps the tests already in the slow tier

A test that took `threshold` seconds or more in any of the runs goes to the slow tier (marked
`slow` by tests/conftest.py): the README's test command skips it, `python -m pytest -m slow` runs
it, and `.ci/run` runs both. Rerun this after adding slow tests; a test missing from the file runs
in the fast tier.
"""

from __future__ import annotations

import argparse
import datetime
import os
import xml.etree.ElementTree as ET
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "slow_tests.txt"


def node_id(classname: str, name: str) -> str:
    """pytest's node id from a JUnit test case (`tests.test_x` or `tests.test_x.TestY`)."""
    parts = classname.split(".")
    for i, part in enumerate(parts):
        if part.startswith("test_"):
            return "::".join(["/".join(parts[: i + 1]) + ".py", *parts[i + 1 :], name])
    raise ValueError(f"cannot find the test module in {classname!r}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "junit_xml", type=Path, nargs="+", help="timed runs; a test's slowest counts"
    )
    parser.add_argument("--threshold", type=float, default=3.0, help="seconds")
    parser.add_argument(
        "--add",
        action="store_true",
        help="keep every test already in the slow tier and add the slow ones of these runs",
    )
    args = parser.parse_args()
    kept = set()
    if args.add and OUT.exists():
        kept = {x for x in OUT.read_text().splitlines() if x and not x.startswith("#")}
    # A fixture's setup counts in the first test that uses it: alone, the fast tier finds
    # costs that a run of the whole suite had spread over tests now in the slow tier.
    slowest: dict[str, float] = {}
    for path in args.junit_xml:
        for c in ET.parse(path).getroot().iter("testcase"):
            n = node_id(c.get("classname"), c.get("name"))
            slowest[n] = max(slowest.get(n, 0.0), float(c.get("time", 0.0)))
    cases = [(t, n) for n, t in slowest.items()]
    slow = sorted({n for t, n in cases if t >= args.threshold} | kept)
    others = [n for n in slowest if n not in kept and slowest[n] < args.threshold]
    fast_s = sum(slowest[n] for n in others)
    header = [
        f"# The slow tier: tests that took >= {args.threshold:g} s in timed runs of the suite",
        f"# ({len(args.junit_xml)} run{'s' * (len(args.junit_xml) > 1)}, {datetime.date.today()}, "
        f"{os.cpu_count()} cores, "
        f"{len(cases)} tests). Written by scripts/tier_tests.py; see its docstring.",
        f"# {len(slow)} slow tests; the {len(others)} other{'s' * (len(others) != 1)} took "
        f"{fast_s:.0f} s of test time at most.",
    ]
    if args.add:
        header.insert(2, f"# --add: kept the {len(kept)} tests of the earlier slow tier.")
    OUT.write_text("\n".join(header + slow) + "\n")
    print(f"Wrote {OUT}: {len(slow)} slow tests ({len(cases)} timed, {len(others)} fast).")


if __name__ == "__main__":
    main()
