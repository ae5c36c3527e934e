"""The cost of a training step with learned rotations (liere, comrope) next to RoPE's.

    python scripts/learned_rotation_cost.py [--windows 7] [--steps 5] [--out runs/bench]

Every encoding trains the same model (the defaults: 2 layers, d_model 64, 4 heads of 16) on the same
task: the 1-D ones on the default experiment's copy of 1-16 symbols, batch 64; the 2-D ones on
grid2d's CPU recipe (grids of side 1-4, batch 32, the grid sampler). Timing windows of `--steps`
jitted steps, each ended by `jax.block_until_ready`, are taken round-robin over the encodings (so a
slow spell of the shared machine touches every encoding alike), after one warm-up window each; the
table gives the median window per step and the ratio to RoPE's (rope_nd's for 2-D). Writes
`OUT/learned_rotation_cost.json`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import jax

from pe_research import encodings, positions, tasks, train
from pe_research.config import RunConfig, TrainConfig

CASES = [
    ("rope", {}, "copy"),
    ("liere", {}, "copy"),
    ("comrope", {}, "copy"),
    ("liere", {"block_size": 2}, "copy"),
    ("rope_nd", {}, "grid"),
    ("liere", {"axes": 2}, "grid"),
    ("comrope", {"axes": 2}, "grid"),
]


def config(name: str, options: dict, task: str) -> RunConfig:
    grid = task == "grid"
    return RunConfig(
        task=tasks.get(task),
        encoding=encodings.get(name, **options),
        positions=positions.get("grid" if grid else "contiguous"),
        train=TrainConfig(batch_size=32, train_length=4) if grid else TrainConfig(),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=7)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--out", default="runs/bench")
    args = parser.parse_args()

    runs = []
    for name, options, task in CASES:
        cfg = config(name, options, task)
        cfg.check()
        keys = train.keys_from_seed(0)
        graphdef, state = train.init_state(cfg, keys)
        step = train.make_train_step(cfg, graphdef)
        label = cfg.encoding.label()
        runs.append({"label": label, "task": task, "step": step, "state": state, "keys": keys})

    def window(run: dict) -> float:
        state, keys = run["state"], run["keys"]
        start = time.perf_counter()
        for _ in range(args.steps):
            state, metrics = run["step"](state, keys.data, keys.positions)
        jax.block_until_ready((state, metrics))
        run["state"] = state
        return (time.perf_counter() - start) / args.steps

    for run in runs:  # compile and warm up
        window(run)
    times = {run["label"] + "@" + run["task"]: [] for run in runs}
    for _ in range(args.windows):
        for run in runs:
            times[run["label"] + "@" + run["task"]].append(window(run))

    rows = []
    base = {"copy": "rope@copy", "grid": "rope_nd@grid"}
    for run in runs:
        key = run["label"] + "@" + run["task"]
        ms = 1e3 * statistics.median(times[key])
        ref = 1e3 * statistics.median(times[base[run["task"]]])
        rows.append({"encoding": run["label"], "task": run["task"], "ms_per_step": ms,
                     "vs_rope": ms / ref})  # fmt: skip
    print("| encoding | task | ms / step | x RoPE |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['encoding']} | {r['task']} | {r['ms_per_step']:.1f} | {r['vs_rope']:.2f} |")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"rows": rows, "windows": args.windows, "steps": args.steps, "jax": jax.__version__}
    (out / "learned_rotation_cost.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
