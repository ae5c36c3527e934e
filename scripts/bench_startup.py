"""Start-up time of the command line: `pe-research --help` and an argument error, beside the
import of jax and flax that every command pays, each timed as a fresh process.

    python scripts/bench_startup.py [--repeats 7] [--out runs/bench/startup.json]

Prints the best and median wall time of each and writes them as JSON. Processes are
interleaved (one of each per round) so that other load on the machine hits all of them alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = {
    "import jax, flax": [sys.executable, "-c", "import jax, flax.nnx"],
    "pe-research --help": [sys.executable, "-m", "pe_research.cli", "--help"],
    "pe-research train --help": [sys.executable, "-m", "pe_research.cli", "train", "--help"],
    "argument error": [sys.executable, "-m", "pe_research.cli", "train", "--no-such-option"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("runs/bench/startup.json"))
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeats):
        for name, command in COMMANDS.items():
            t0 = time.perf_counter()
            subprocess.run(command, capture_output=True, check=False)
            seconds[name].append(time.perf_counter() - t0)
    base = min(seconds["import jax, flax"])
    rows = {
        name: {
            "best_s": round(min(s), 3),
            "median_s": round(statistics.median(s), 3),
            "best_over_jax_flax_s": round(min(s) - base, 3),
        }
        for name, s in seconds.items()
    }
    for name, row in rows.items():
        print(
            f"{name:26s} best {row['best_s']:.2f} s  median {row['median_s']:.2f} s  "
            f"(+{row['best_over_jax_flax_s']:.2f} s over jax and flax)"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"repeats": args.repeats, "commands": rows}, indent=1) + "\n")
    print(f"Wrote {args.out}")


if __name__ == "__main__":
    main()
