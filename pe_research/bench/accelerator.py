"""The accelerator suite: how close one process gets to the chip's peak, into one JSON.

    pe-research bench accelerator [--out runs/bench]      # OUT/accelerator.json
    pe-research bench accelerator --tiny                  # 1-layer models, for a CPU test
    pe-research bench accelerator --only paper-scale:float32 peer   # a subset of the suite

For each workload, model-steps/s (packed models x steps/s), real (non-padding) tokens/s and the
fraction of the chip's matmul peak in the workload's dtype and in fp32, both peaks measured in
the same process (a large square matmul, `bench.measure_matmul_peak`):

    main-packed   the main job's model (experiments/default.py: 4 layers, d_model 64, batch 64,
                  copy of 1..16 in 4 length buckets), K = 1, 8, 64, 256, 512 packed runs;
                  `saturates_at` is the first K whose throughput is below 0.8 x K one model's
    peer          DeepMind randomized_positional_encodings' transformer on its curriculum
                  (5 layers, d_model 64, 8 heads, batch 128, reverse of 1..40, 8 buckets)
    paper-scale   McGill's model size (Kazemnejad et al., 2023: 12 layers, d_model 768, 12
                  heads, MLP 3072), batch 64, copy of 1..40 symbols, bf16 and fp32

--only names workloads (`peer`) or one dtype of one (`paper-scale:float32`): the full suite
compiles for about 5 minutes on an H200, more than a short device lease spares for a rerun of
what a cut run missed. A workload that runs out of memory is recorded with its error and the
suite goes on. FLOPs are training.flops.train_step_flops (matmuls only, padding included).
"""

from __future__ import annotations

import dataclasses
import datetime
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax

from pe_research import bench, encodings, runs, tasks
from pe_research.config import ModelConfig, RunConfig, TrainConfig

TINY_MODEL = ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32)
MAIN_KS = (1, 8, 64, 256, 512)


def workloads(tiny: bool = False) -> list[tuple[str, RunConfig, tuple[int, ...], tuple[str, ...]]]:
    """(name, config, packed-model counts K, compute dtypes) of each workload of the suite."""
    main = RunConfig(
        task=tasks.get("copy"),
        encoding=encodings.get("rope"),
        model=ModelConfig(num_layers=4),  # sweeps.experiments.FIT_MODEL
        train=TrainConfig(batch_size=64, train_length=16, length_buckets=4),
    )
    peer = dataclasses.replace(
        bench.WORKLOADS["peer-curriculum"].cfg,
        train=TrainConfig(batch_size=128, train_length=40, length_buckets=8),
    )
    paper = RunConfig(
        task=tasks.get("copy"),
        encoding=encodings.get("rope"),
        model=ModelConfig(num_layers=12, d_model=768, num_heads=12, mlp_dim=3072),
        train=TrainConfig(batch_size=64, train_length=40, length_buckets=4),
    )
    suite = [
        ("main-packed", main, MAIN_KS, ("float32",)),
        ("peer", peer, (1,), ("float32", "bfloat16")),
        ("paper-scale", paper, (1,), ("bfloat16", "float32")),
    ]
    if tiny:  # the same code path at sizes a CPU test can afford
        small = TrainConfig(batch_size=8, train_length=8, length_buckets=2)

        def shrink(cfg: RunConfig) -> RunConfig:
            model = dataclasses.replace(TINY_MODEL, causal=cfg.model.causal)
            return dataclasses.replace(cfg, model=model, train=small)

        suite = [(n, shrink(c), (1, 2) if len(ks) > 1 else ks, d) for n, c, ks, d in suite]
    return suite


def select(
    suite: list[tuple[str, RunConfig, tuple[int, ...], tuple[str, ...]]], only: tuple[str, ...]
) -> list[tuple[str, RunConfig, tuple[int, ...], tuple[str, ...]]]:
    """The suite cut to `only` (entries NAME or NAME:DTYPE, in the suite's order); all of it if
    `only` is empty. An entry that names no workload or dtype of the suite is an error."""
    if not only:
        return suite
    dtypes_of = {name: dtypes for name, _, _, dtypes in suite}
    wanted: dict[str, set[str]] = {}
    for entry in only:
        name, _, dtype = entry.partition(":")
        if name not in dtypes_of or (dtype and dtype not in dtypes_of[name]):
            choices = ", ".join(f"{n} ({'/'.join(d)})" for n, d in dtypes_of.items())
            raise ValueError(
                f"--only {entry!r} is not in the accelerator suite; choose NAME or NAME:DTYPE "
                f"from: {choices}"
            )
        wanted.setdefault(name, set()).update([dtype] if dtype else dtypes_of[name])
    return [
        (name, cfg, ks, tuple(d for d in dtypes if d in wanted[name]))
        for name, cfg, ks, dtypes in suite
        if name in wanted
    ]


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def run_suite(
    out: Path = Path("runs/bench"),
    *,
    tiny: bool = False,
    only: tuple[str, ...] = (),
    steps: int = 10,
    repeats: int = 5,
    log: Callable[[str], None] = print,
) -> Path:
    """Measure every workload of the suite (or those `only` names: `select`); write and return
    OUT/accelerator.json (rewritten after each measurement, so a run cut short keeps what it
    measured)."""
    suite = select(workloads(tiny), only)  # before the peaks: a bad name fails at once
    peak_n = 256 if tiny else 8192 if jax.default_backend() != "cpu" else 2048
    peaks = {d: bench.measure_matmul_peak(peak_n, dtype=d) for d in ("float32", "bfloat16")}
    report: dict[str, Any] = {
        "workload": "accelerator",
        "date": datetime.date.today().isoformat(),
        "device": jax.devices()[0].device_kind,
        "device_count": jax.device_count(),
        "commit": _commit(),
        "versions": runs.versions(),
        "tiny": tiny,
        "only": list(only),
        "matmul_peak_tflop_per_s": {d: round(p / 1e12, 3) for d, p in peaks.items()},
        "rows": [],
    }
    log(f"accelerator suite on {report['device']}: matmul peak (TFLOP/s) "
        f"{report['matmul_peak_tflop_per_s']}")  # fmt: skip
    bench.write(out, report)
    for name, cfg, ks, dtypes in suite:
        for dtype in dtypes:
            run_cfg = dataclasses.replace(
                cfg, model=dataclasses.replace(cfg.model, compute_dtype=dtype)
            )
            one = None
            for k in ks:
                row = _measure(run_cfg, k, peaks, dtype, steps, repeats)
                row = {"workload": name, "dtype": dtype, **row}
                if "error" not in row:
                    one = one or row
                    row["vs_k_times_one"] = round(
                        row["model_steps_per_s"] / (one["model_steps_per_s"] * k), 3
                    )
                report["rows"].append(row)
                bench.write(out, report)
                log(_line(row))
        rows = [r for r in report["rows"] if r["workload"] == name and "vs_k_times_one" in r]
        below = [r["models"] for r in rows if r["vs_k_times_one"] < 0.8]
        if len(ks) > 1:
            report.setdefault("saturates_at", {})[name] = below[0] if below else None
            bench.write(out, report)  # a suite stopped in the next workload keeps it
    return bench.write(out, report)


def _measure(
    cfg: RunConfig, k: int, peaks: dict[str, float], dtype: str, steps: int, repeats: int
) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        row = bench.measure_training(cfg, k, peaks[dtype], max(steps // max(k // 64, 1), 2),
                                     repeats)  # fmt: skip
    except Exception as e:  # recorded: the suite goes on with the next measurement
        text = f"{type(e).__name__}: {e}"
        oom = "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()
        return {"models": k, "error": text[:2000], "out_of_memory": oom}
    flops_per_s = row["gflop_per_s"] * 1e9
    row["fraction_of_fp32_peak"] = round(flops_per_s / peaks["float32"], 3)
    row["fraction_of_dtype_peak"] = round(flops_per_s / peaks[dtype], 3)
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    return row


def _line(row: dict[str, Any]) -> str:
    if "error" in row:
        return (
            f"  {row['workload']:12s} {row['dtype']:9s} K={row['models']:<4d} {row['error'][:80]}"
        )
    return (
        f"  {row['workload']:12s} {row['dtype']:9s} K={row['models']:<4d} "
        f"{row['model_steps_per_s']:10.1f} model-steps/s {row['real_tokens_per_s']:12.0f} real "
        f"tok/s  {row['fraction_of_dtype_peak']:.0%} of {row['dtype']} peak"
    )
