"""Accelerator check: the bench workloads in fp32 and bf16 at chip-filling batches, packed seeds
K = 1..256, and one experiment's gpu preset end to end, into one JSON (OUT/device_check.json).

    bash scripts/device_check.sh            # on the device: installs the carried wheels, runs this
    python scripts/device_check.py --out runs/device [--budget 480] [--skip-sweep]

The JSON is rewritten after every measurement, so a run cut short keeps what it measured; once
--budget seconds are spent the remaining measurements are recorded as skipped. Fractions of peak
are of the fp32 matmul peak measured in the same process (bench.measure_matmul_peak). The sweep
runs in a child process that does not preallocate GPU memory (this one holds JAX's default 75%),
writing to --sweep-out, outside OUT: its run directories are far more files than come back.

Smoke test on CPU (about 40 s on 2 cores; tests/test_device_script.py runs it):
    python scripts/device_check.py --out /tmp/dc --tiny --workloads default --steps 1 \
        --repeats 1 --batch-multipliers 1 --ks 1 2 --dtypes float32 --skip-sweep
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import jax

from pe_research import bench, runs
from pe_research.config import ModelConfig, RunConfig, TrainConfig
from pe_research.sweeps import experiments

ROOT = Path(__file__).resolve().parents[1]
DTYPES = ("float32", "bfloat16")
TINY_MODEL = ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32)


class Report:
    """The JSON being built, saved after each change; the time budget it is measured under."""

    def __init__(self, path: Path, budget_s: float, settings: dict[str, Any]):
        self.path, self.budget_s, self.t0 = path, budget_s, time.perf_counter()
        self.data: dict[str, Any] = {"status": "running", "settings": settings, "skipped": []}
        path.parent.mkdir(parents=True, exist_ok=True)

    def left_s(self) -> float:
        return self.budget_s - (time.perf_counter() - self.t0)

    def has_time(self, what: str) -> bool:
        """False, recording `what` as skipped, once the budget is spent."""
        if self.left_s() > 0:
            return True
        self.data["skipped"].append(f"{what}: time budget of {self.budget_s:.0f} s spent")
        self.save()
        return False

    def save(self) -> None:
        self.data["elapsed_s"] = round(time.perf_counter() - self.t0, 1)
        runs.write_atomic(self.path, json.dumps(self.data, indent=2, default=str) + "\n")


def variant(cfg: RunConfig, dtype: str, multiplier: int, tiny: bool) -> RunConfig:
    """`cfg` in compute dtype `dtype` at `multiplier` times its batch (a 1-layer d16 model on
    8-symbol sequences with --tiny, for smoke tests)."""
    model = TINY_MODEL if tiny else cfg.model
    model = dataclasses.replace(model, causal=cfg.model.causal, compute_dtype=dtype)
    train: TrainConfig = cfg.train
    if tiny:
        train = dataclasses.replace(train, batch_size=8, train_length=8)
    train = dataclasses.replace(train, batch_size=train.batch_size * multiplier)
    return dataclasses.replace(cfg, model=model, train=train)


def measure(cfg: RunConfig, models: int, peak: float, steps: int, repeats: int) -> dict[str, Any]:
    """bench.measure_training, or the error it raised (flagged when the device ran out of
    memory), with the device's peak memory so far where the backend reports it."""
    try:
        row = bench.measure_training(cfg, models, peak, steps, repeats)
    except Exception as e:  # recorded in the JSON: the run goes on to the next measurement
        text = f"{type(e).__name__}: {e}"
        oom = "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()
        row = {"models": models, "error": text[:2000], "out_of_memory": oom}
    stats = jax.devices()[0].memory_stats() or {}
    if "peak_bytes_in_use" in stats:
        row["device_peak_gib"] = round(stats["peak_bytes_in_use"] / 2**30, 2)
    return row


def check_workloads(report: Report, args: argparse.Namespace, peak: float) -> None:
    """(a) Each workload x dtype x batch multiplier, one model (peer-curriculum at its largest
    number of length buckets: with one bucket it is the `peer` workload)."""
    rows = report.data["workloads"] = []
    for name in args.workloads:
        work = bench.WORKLOADS[name]
        cfg = work.cfg
        if work.length_buckets:
            buckets = max(work.length_buckets)
            cfg = dataclasses.replace(
                cfg, train=dataclasses.replace(cfg.train, length_buckets=buckets)
            )
        for dtype in args.dtypes:
            for m in args.batch_multipliers:
                what = f"{name} {dtype} batch x{m}"
                if not report.has_time(what):
                    continue
                run_cfg = variant(cfg, dtype, m, args.tiny)
                row = measure(run_cfg, 1, peak, args.steps, args.repeats)
                rows.append(
                    {"workload": name, "dtype": dtype, "batch_multiplier": m, **row}
                    | {"batch_size": run_cfg.train.batch_size}
                )
                report.save()
                print(line(rows[-1]), flush=True)


def check_packed(report: Report, args: argparse.Namespace, peak: float) -> None:
    """(b) K packed seeds of one workload, until the first out-of-memory error."""
    cfg = variant(bench.WORKLOADS[args.packed_workload].cfg, args.packed_dtype, 1, args.tiny)
    rows: list[dict[str, Any]] = []
    report.data["packed"] = {
        "workload": args.packed_workload,
        "dtype": args.packed_dtype,
        "batch_size": cfg.train.batch_size,
        "rows": rows,
        "stopped": None,
    }
    for k in args.ks:
        if not report.has_time(f"packed K={k}"):
            break
        row = measure(cfg, k, peak, max(args.steps // k, 2), args.repeats)
        row = {"workload": args.packed_workload, "dtype": args.packed_dtype, **row}
        row["batch_size"] = cfg.train.batch_size
        rows.append(row)
        if "error" not in row:  # throughput over K one-model runs at the first K measured
            first = next(r for r in rows if "error" not in r)
            row["vs_one_by_one"] = round(
                row["tokens_per_s"] / (first["tokens_per_s"] / first["models"] * k), 3
            )
        if row.get("out_of_memory"):
            report.data["packed"]["stopped"] = f"out of memory at K={k}"
        report.save()
        print(line(row), flush=True)
        if row.get("out_of_memory"):
            break


def check_sweep(report: Report, args: argparse.Namespace) -> None:
    """(c) `pe-research sweep EXPERIMENT --scale SCALE` in a child process, stopped after
    --sweep-timeout seconds (or what is left of the budget): wall time, runs finished, output."""
    if not report.has_time(f"sweep {args.sweep} --scale {args.sweep_scale}"):
        return
    timeout = min(args.sweep_timeout, report.left_s())
    out = args.sweep_out
    out.mkdir(parents=True, exist_ok=True)
    done_before = sum(1 for _ in out.rglob(runs.DONE))  # a sweep resumes: count what it found
    module = experiments.load_experiment(str(ROOT / "experiments" / f"{args.sweep}.py"))
    total = len(experiments.experiment_runs(module, args.sweep_scale))
    cmd = [sys.executable, "-m", "pe_research.cli", "sweep", args.sweep]
    cmd += ["--scale", args.sweep_scale, "--out", str(out), "--no-progress"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    log = out / "sweep.log"
    t0 = time.perf_counter()
    with open(log, "w") as f:
        # Its own process group, so that a timeout stops every process the sweep started.
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):  # it may have ended just now
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
    summary = out / "summary.md"
    report.data["sweep"] = {
        "command": " ".join(cmd),
        "out": str(out),
        "timeout_s": round(timeout, 1),
        "wall_s": round(time.perf_counter() - t0, 1),
        "finished": rc == 0,
        "timed_out": rc is None,
        "returncode": rc,
        "runs_done": sum(1 for _ in out.rglob(runs.DONE)),
        "runs_done_before": done_before,
        "runs_total": total,
        "summary_md": summary.read_text() if summary.exists() else None,
        "output_tail": log.read_text().splitlines()[-args.sweep_tail :],
    }
    report.save()


def line(row: dict[str, Any]) -> str:
    """One row of the final table."""
    head = f"{row['workload']:16s} {row['dtype']:9s} batch {row['batch_size']:<5d}"
    head += f" K={row['models']:<4d}"
    if "error" in row:
        kind = "out of memory" if row["out_of_memory"] else "error"
        return f"{head} {kind}: {row['error'][:80]}"
    return (
        f"{head} {int(row['tokens_per_step']):>9d} tok/step  compile {row['compile_s']:6.1f} s  "
        f"step {row['step_s'] * 1e3:8.2f} ms  "
        f"{row['tokens_per_s']:12.0f} tok/s  {row['fraction_of_peak']:6.1%} of fp32 peak"
    )


def table(data: dict[str, Any]) -> str:
    rows = data.get("workloads", []) + data.get("packed", {}).get("rows", [])
    lines = [
        f"device {data.get('device')}, fp32 peak {data.get('matmul_peak_gflop_per_s')} GFLOP/s"
    ]
    lines += [line(r) for r in rows]
    if "sweep" in data:
        s = data["sweep"]
        state = "finished" if s["finished"] else ("timed out" if s["timed_out"] else "FAILED")
        lines.append(
            f"sweep {state} after {s['wall_s']} s: {s['runs_done']}/{s['runs_total']} runs done"
        )
    lines += [f"skipped {s}" for s in data["skipped"]]
    return "\n".join(lines)


def failures(data: dict[str, Any]) -> list[str]:
    """What went wrong (running out of memory at a large K is a result, not a failure)."""
    bad = [
        f"{r['workload']} {r['dtype']} batch x{r['batch_multiplier']}: {r['error'][:300]}"
        for r in data.get("workloads", [])
        if "error" in r
    ]
    bad += [
        f"packed K={r['models']}: {r['error'][:300]}"
        for r in data.get("packed", {}).get("rows", [])
        if "error" in r and not r["out_of_memory"]
    ]
    sweep = data.get("sweep")
    if sweep and not sweep["finished"] and not sweep["timed_out"]:
        bad.append(f"sweep exited with {sweep['returncode']}")
    return bad


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--out", type=Path, default=Path("runs/device"))
    p.add_argument("--budget", type=float, default=480, help="seconds for all sections")
    p.add_argument(
        "--workloads",
        nargs="+",
        choices=sorted(bench.WORKLOADS),
        default=["peer", "peer-curriculum", "default", "small-d128"],
    )
    p.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES))
    p.add_argument("--batch-multipliers", nargs="+", type=int, default=[8, 32])
    p.add_argument("--steps", type=int, default=20, help="timed steps per window")
    p.add_argument("--repeats", type=int, default=3, help="timed windows (median taken)")
    p.add_argument(
        "--peak-n", type=int, help="size of the peak's square matmul (default 8192, 1024 on CPU)"
    )
    p.add_argument("--ks", nargs="+", type=int, default=[2**i for i in range(9)])
    p.add_argument("--packed-workload", choices=sorted(bench.WORKLOADS), default="default")
    p.add_argument("--packed-dtype", choices=DTYPES, default="float32")
    p.add_argument("--skip-packed", action="store_true")
    p.add_argument("--sweep", default="prope", help="experiment run end to end")
    p.add_argument("--sweep-scale", default="gpu")
    p.add_argument("--sweep-timeout", type=float, default=300)
    p.add_argument(
        "--sweep-out", type=Path, default=Path(tempfile.gettempdir()) / "device_check" / "sweep"
    )
    p.add_argument("--sweep-tail", type=int, default=60, help="output lines kept")
    p.add_argument("--skip-sweep", action="store_true")
    p.add_argument("--tiny", action="store_true", help="a 1-layer d16 model (smoke tests)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if "compute_dtype" not in {f.name for f in dataclasses.fields(ModelConfig)}:
        sys.exit(
            "device_check: pe_research's ModelConfig has no compute_dtype field, so float32 and "
            "bfloat16 cannot be compared: update pe_research/config.py (ModelConfig.compute_dtype) "
            "before running this check."
        )
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    report = Report(args.out / "device_check.json", args.budget, settings)
    report.data["versions"] = runs.versions()
    report.data["device"] = jax.devices()[0].device_kind
    stats = jax.devices()[0].memory_stats() or {}
    report.data["device_memory_limit_gib"] = round(stats.get("bytes_limit", 0) / 2**30, 2) or None
    peak = bench.measure_matmul_peak(
        args.peak_n or (1024 if jax.default_backend() == "cpu" else 8192)
    )
    report.data["matmul_peak_gflop_per_s"] = round(peak / 1e9, 1)
    report.save()
    print(f"device {report.data['device']}: fp32 matmul peak {peak / 1e12:.1f} TFLOP/s", flush=True)
    check_workloads(report, args, peak)
    if not args.skip_packed:
        check_packed(report, args, peak)
    if not args.skip_sweep:
        check_sweep(report, args)
    bad = failures(report.data)
    report.data["status"] = "failed" if bad else "complete"
    report.save()
    print(table(report.data))
    print("\n".join(["FAILED:", *bad]) if bad else f"Wrote {report.path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
