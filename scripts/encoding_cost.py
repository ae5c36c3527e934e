"""The step time of any encodings side by side with RoPE's, timed in one process.

    python scripts/encoding_cost.py [--encodings NAME[:K=V,...] ...] [--windows 7] [--steps 5]
        [--out runs/bench]
    python scripts/encoding_cost.py --encodings alibi rope:base=500 liere:axes=2

Every encoding trains the same model (ModelConfig's defaults: 2 layers, d_model 64, 4 heads of
16): a 1-D encoding on the default experiment's copy of 1-16 symbols at batch 64, beside RoPE; a
2-D one (rope_nd, liere:axes=2, ...) on grid2d's CPU recipe (grids of side 1-4, batch 32, the
grid sampler), beside rope_nd. The reference is added to the encodings given. Timing windows of
--steps jitted steps, each ended by jax.block_until_ready, are taken round-robin over the
encodings, after one warm-up window each, so that a slow spell of a shared machine touches
every encoding alike. Prints the median window per step and its ratio to the reference, and
writes them to OUT/encoding_cost.json. The default list: the learned rotations (liere, comrope,
liere with blocks of 2, and both in 2-D) and PaTH.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

DEFAULT = [
    "liere",
    "comrope",
    "liere:block_size=2",
    "path",
    "liere:axes=2",
    "comrope:axes=2",
]
# position_axes -> (the reference encoding, the task it and its peers train on)
REFERENCES = {None: ("rope", "copy"), 2: ("rope_nd", "grid")}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--encodings", nargs="+", default=DEFAULT, metavar="NAME[:K=V,...]",
        help="encodings to time, e.g. rope:base=500 (values read as JSON)",
    )  # fmt: skip
    parser.add_argument("--windows", type=int, default=7, help="timed windows per encoding")
    parser.add_argument("--steps", type=int, default=5, help="jitted steps per window")
    parser.add_argument("--out", type=Path, default=Path("runs/bench"))
    args = parser.parse_args()
    # Imported after parsing: --help and argument errors answer without loading jax.
    import jax

    from pe_research import encodings, positions, tasks, train
    from pe_research.config import RunConfig, TrainConfig
    from pe_research.essay.report import parse_encoding

    def config(encoding: encodings.Encoding) -> RunConfig:
        """The run an encoding is timed on: copy for 1-D positions, grid for 2-D ones."""
        grid = REFERENCES[encoding.position_axes][1] == "grid"
        return RunConfig(
            task=tasks.get("grid" if grid else "copy"),
            encoding=encoding,
            positions=positions.get("grid" if grid else "contiguous"),
            train=TrainConfig(batch_size=32, train_length=4) if grid else TrainConfig(),
        )

    chosen = []
    for spec in args.encodings:
        try:
            chosen.append(parse_encoding(spec))
        except (KeyError, TypeError, ValueError) as e:
            parser.error(f"--encodings {spec}: {e}")
    for enc in chosen:
        if enc.position_axes not in REFERENCES:
            parser.error(
                f"{enc.label()} takes {enc.position_axes}-D positions; this script times 1-D "
                "encodings on copy beside rope and 2-D ones on grid beside rope_nd: leave it out."
            )
    chosen = [  # each reference first, then the encodings timed beside it
        enc
        for axes, (reference, _) in REFERENCES.items()
        if any(c.position_axes == axes for c in chosen)
        for enc in [encodings.get(reference), *(c for c in chosen if c.position_axes == axes)]
    ]

    runs = {}
    for enc in chosen:
        cfg = config(enc)
        key = f"{enc.label()}@{cfg.task.name}"
        if key in runs:
            continue
        cfg.check()
        keys = train.keys_from_seed(0)
        graphdef, state = train.init_state(cfg, keys)
        step = train.make_train_step(cfg, graphdef)
        runs[key] = {"cfg": cfg, "step": step, "state": state, "keys": keys, "times": []}

    def window(run: dict) -> float:
        state, keys = run["state"], run["keys"]
        start = time.perf_counter()
        for _ in range(args.steps):
            state, metrics = run["step"](state, keys.data, keys.positions)
        jax.block_until_ready((state, metrics))
        run["state"] = state
        return (time.perf_counter() - start) / args.steps

    for run in runs.values():  # compile and warm up
        window(run)
    for _ in range(args.windows):
        for run in runs.values():
            run["times"].append(window(run))

    rows = []
    for run in runs.values():
        cfg = run["cfg"]
        name, task = REFERENCES[cfg.encoding.position_axes]
        ms = 1e3 * statistics.median(run["times"])
        ref = 1e3 * statistics.median(runs[f"{encodings.get(name).label()}@{task}"]["times"])
        rows.append({"encoding": cfg.encoding.label(), "task": task, "reference": name,
                     "ms_per_step": ms, "vs_reference": ms / ref})  # fmt: skip
    print("| encoding | task | ms / step | x reference |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['encoding']} | {r['task']} | {r['ms_per_step']:.1f} "
              f"| {r['vs_reference']:.2f} x {r['reference']} |")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    record = {"rows": rows, "windows": args.windows, "steps": args.steps, "jax": jax.__version__}
    (args.out / "encoding_cost.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"Wrote {args.out / 'encoding_cost.json'}")


if __name__ == "__main__":
    main()
