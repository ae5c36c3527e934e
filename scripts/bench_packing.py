"""Packed seeds vs one by one: training throughput of K models in one vmapped program.

    python scripts/bench_packing.py [--steps 200] [--ks 1 2 4 8] [--out bench_packing.json]

Trains the default experiment's model on copy for K seeds at once (train.train_group) and
reports total training tokens/s (padded tokens, steady state: the median of the logged windows
after the first) for each K, and the speed-up over K runs one by one (K x the K=1 time).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
import time
from pathlib import Path

from pe_research import encodings, results, tasks, train
from pe_research.config import EvalConfig, RunConfig, TrainConfig


def measure(k: int, steps: int, root: Path) -> dict:
    cfg = RunConfig(
        task=tasks.get("copy"),
        encoding=encodings.get("rope"),
        train=TrainConfig(steps=steps, train_length=16, log_every=max(steps // 5, 1)),
        eval=EvalConfig(lengths=(16,), batch_size=16),
    )
    cfgs = [dataclasses.replace(cfg, seed=s) for s in range(k)]
    dirs = [root / f"k{k}" / f"s{s}" for s in range(k)]
    t0 = time.perf_counter()
    train.train_group(cfgs, dirs, progress=False)
    wall = time.perf_counter() - t0
    rows = results.read_jsonl(dirs[0] / results.METRICS)
    tok_s = statistics.median(r["tokens_per_s"] for r in rows[1:])
    return {"K": k, "tokens_per_s": tok_s, "compile_s": rows[0]["compile_s"], "wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--out", type=Path, default=Path("bench_packing.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(k, args.steps, Path(tmp)) for k in args.ks]
    single = next((r["tokens_per_s"] for r in rows if r["K"] == 1), None)
    for r in rows:
        r["speedup_vs_one_by_one"] = round(r["tokens_per_s"] / single, 2) if single else None
        print(
            f"K={r['K']:3d}  {r['tokens_per_s']:10.0f} tokens/s  "
            f"x{r['speedup_vs_one_by_one']} vs one by one  compile {r['compile_s']:.1f} s"
        )
    args.out.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"Wrote {args.out}")


if __name__ == "__main__":
    main()
