"""Named speed workloads: compile time, steady-state step time, tokens/s, FLOPs and the fraction
of this machine's matmul peak, evaluation compiles, and packed-seed throughput.

    pe-research bench peer [--ks 1 2 4 8] [--out runs/bench]
    pe-research bench accelerator [--tiny]       # the accelerator suite (bench/accelerator.py)

Every number comes from the code path that training uses (`train.build_program`, the packed
step; `evaluate.evaluate_packed`). Step times are medians over several timed windows after a
warm-up, each window ended by `jax.block_until_ready`. The fp32 matmul peak is measured in the
same process (a large square matmul), so the fraction of peak is meaningful on a shared,
noisy machine where absolute numbers drift.

FLOPs are analytic, matmuls only (projections, attention scores and values, MLP, output head),
counted as 2 per multiply-add and x3 for a training step (forward, and a backward pass of twice
the forward). XLA's own count of the compiled step is reported next to it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pe_research import encodings, runs, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.training import evaluate
from pe_research.training.flops import train_step_flops
from pe_research.training.step import padded_tokens

# -- compile counting -------------------------------------------------------------------------

_COUNTS = {"compiles": 0, "cache_hits": 0}


def _on_duration(event: str, duration: float, **_: Any) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        _COUNTS["compiles"] += 1


def _on_event(event: str, **_: Any) -> None:
    if event == "/jax/compilation_cache/cache_hits":
        _COUNTS["cache_hits"] += 1


@functools.cache
def _listen() -> None:
    """Register the counting listeners with JAX, once per process, when first needed: jax has
    no public way to remove a listener, so importing this module must not add one."""
    jax.monitoring.register_event_duration_secs_listener(_on_duration)
    jax.monitoring.register_event_listener(_on_event)


class CompileCounter:
    """Counts XLA compilations inside a `with` block: `.compiles` programs were needed, of which
    `.cache_hits` came from the persistent compilation cache, so `.xla_compiles` were compiled."""

    def __enter__(self) -> CompileCounter:
        _listen()
        self._start = dict(_COUNTS)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.compiles = _COUNTS["compiles"] - self._start["compiles"]
        self.cache_hits = _COUNTS["cache_hits"] - self._start["cache_hits"]
        self.xla_compiles = self.compiles - self.cache_hits


# -- workloads --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Workload:
    description: str
    cfg: RunConfig
    encodings: tuple[str, ...] = ("rope",)
    length_buckets: tuple[int, ...] = ()
    """Also time these values of train.length_buckets (the first encoding, one model)."""


PEER_MODEL = ModelConfig(
    num_layers=5, d_model=64, num_heads=8, mlp_dim=256, causal=False,
    norm_position="post", mlp="relu", embed_std=0.02 * 64**0.5, dropout=0.1,
)  # fmt: skip
"""Ruoss et al.'s default encoder as their code builds it (models/transformer.py,
experiments/example.py): 5 layers, d_model 64, 8 heads, MLP 4x, bidirectional, post-LayerNorm,
ReLU, dropout 0.1 on the input and each sublayer's output (their default, on when they train),
token embeddings of std 0.16. The randomized experiment's ENCODER is the same model."""


def _peer_cfg(**train: Any) -> RunConfig:
    # The peer's encoder on binary reverse_string (their alphabet is {0, 1}).
    return RunConfig(
        task=tasks.get("reverse", alphabet=2),
        encoding=encodings.get("rope"),
        model=PEER_MODEL,
        train=TrainConfig(**train),
    )


WORKLOADS: dict[str, Workload] = {
    "peer": Workload(
        "DeepMind randomized_positional_encodings' default transformer: bidirectional encoder, "
        "5 layers, d_model 64, 8 heads, MLP 4x, post-LayerNorm, ReLU, dropout 0.1, batch 128, "
        "reverse of 40 binary symbols "
        "(40 + SEP + 40 answer positions = 81 tokens; the peer uses 80, without SEP)",
        _peer_cfg(batch_size=128, train_length=40),
        ("rope", "nope", "sinusoidal"),
    ),
    "peer-curriculum": Workload(
        "The peer's transformer on its curriculum: lengths uniform in 1..40 per sequence (the "
        "peer draws one length per batch and compiles one program per length), batch 128; "
        "sequences/s and real (non-padding) tokens/s for 1, 2, 4, 8 length buckets",
        _peer_cfg(batch_size=128, train_length=40),
        ("rope",),
        length_buckets=(1, 2, 4, 8),
    ),
    "default": Workload(
        "The default experiment's model: causal, 2 layers, d_model 64, 4 heads, batch 64, copy "
        "of 1..16 symbols (32 tokens)",
        RunConfig(task=tasks.get("copy"), encoding=encodings.get("rope")),
    ),
    "small-d128": Workload(
        "Causal, 2 layers, d_model 128, 4 heads, MLP 512, batch 64, copy of 1..32 symbols "
        "(64 tokens)",
        RunConfig(
            task=tasks.get("copy"),
            encoding=encodings.get("rope"),
            model=ModelConfig(num_layers=2, d_model=128, num_heads=4, mlp_dim=512),
            train=TrainConfig(batch_size=64, train_length=32),
        ),
    ),
}


def real_tokens_per_sequence(cfg: RunConfig) -> float:
    """Mean number of real (non-padding) tokens of a training sequence: lengths are uniform in
    1..train_length whatever the buckets."""
    n = cfg.train.train_length
    return sum(cfg.task.seq_len(k, cfg.model.causal) for k in range(1, n + 1)) / n


def measure_matmul_peak(n: int = 2048, repeats: int = 5, dtype: str = "float32") -> float:
    """This machine's matmul throughput in `dtype` in FLOP/s (median of `repeats`)."""
    a, b = (jax.random.normal(jax.random.key(i), (n, n), dtype) for i in range(2))
    mm = jax.jit(jnp.matmul)
    mm(a, b).block_until_ready()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        mm(a, b).block_until_ready()
        times.append(time.perf_counter() - t0)
    return 2 * n**3 / statistics.median(times)


def _xla_flops(compiled: Any) -> float | None:
    try:
        cost = compiled.cost_analysis()
    except Exception:  # not every backend implements cost analysis
        return None
    cost = cost[0] if isinstance(cost, list) else cost
    return float(cost["flops"]) if cost and "flops" in cost else None


def time_steps(prog: train.Program, steps: int, repeats: int, warmup: int = 2) -> list[float]:
    """Seconds per step of `repeats` windows of `steps` steps each, after `warmup` steps."""
    state = prog.state
    for _ in range(warmup):
        state, metrics = prog.run(state)
    jax.block_until_ready(state)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            state, metrics = prog.run(state)
        jax.block_until_ready((state, metrics))
        times.append((time.perf_counter() - t0) / steps)
    return times


def measure_training(
    cfg: RunConfig, num_models: int, peak: float, steps: int, repeats: int
) -> dict[str, Any]:
    """Compile time, step time, tokens/s and fraction of peak of K packed models."""
    with CompileCounter() as counter:
        prog = train.build_program(cfg, list(range(num_models)))
    step_s = statistics.median(time_steps(prog, steps, repeats))
    sequences = num_models * cfg.train.batch_size
    padded = num_models * padded_tokens(cfg)
    real = sequences * real_tokens_per_sequence(cfg)
    flops = train_step_flops(cfg, num_models)
    return {
        "models": num_models,
        "model_steps_per_s": round(num_models / step_s, 2),
        "length_buckets": cfg.train.length_buckets,
        "compile_s": round(prog.compile_s, 3),
        "xla_compiles": counter.xla_compiles,
        "step_s": round(step_s, 5),
        "sequences_per_s": round(sequences / step_s, 1),
        "tokens_per_s": round(padded / step_s, 1),  # computed, padding included
        "real_tokens_per_s": round(real / step_s, 1),
        "padding_fraction": round(1 - real / padded, 3),
        "tokens_per_step": padded,
        "flops_per_step": flops,
        "xla_flops_per_step": _xla_flops(prog.step),
        "gflop_per_s": round(flops / step_s / 1e9, 2),
        "fraction_of_peak": round(flops / step_s / peak, 3),
    }


def measure_eval(cfg: RunConfig, lengths: int = 8) -> dict[str, Any]:
    """Evaluation over 1x..`lengths`x the training length: wall time and XLA compiles."""
    cfg = dataclasses.replace(
        cfg, eval=dataclasses.replace(cfg.eval, lengths=cfg.eval_lengths[:lengths])
    )
    graphdef, state = train.init_state(cfg, train.keys_from_seed(0))
    params_S = jax.tree.map(lambda x: x[None], state.params)
    with CompileCounter() as counter:
        t0 = time.perf_counter()
        evaluate.evaluate_packed(cfg, graphdef, params_S)
        seconds = time.perf_counter() - t0
    return {
        "eval_lengths": list(cfg.eval_lengths),
        "eval_buckets": sorted(set(evaluate.buckets(cfg).values())),
        "eval_s": round(seconds, 3),
        "eval_compiles": counter.compiles,
        "eval_xla_compiles": counter.xla_compiles,
    }


def run_workload(
    name: str,
    *,
    ks: tuple[int, ...] = (1, 2, 4, 8),
    steps: int = 10,
    repeats: int = 5,
    encodings_: tuple[str, ...] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """All measurements of one named workload, as one JSON-ready dict."""
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; choose one of {sorted(WORKLOADS)}.")
    work = WORKLOADS[name]
    peak = measure_matmul_peak()
    log(f"{name}: fp32 matmul peak {peak / 1e9:.1f} GFLOP/s")
    out: dict[str, Any] = {
        "workload": name,
        "description": work.description,
        "device": jax.devices()[0].device_kind,
        "versions": runs.versions(),
        "matmul_peak_gflop_per_s": round(peak / 1e9, 2),
        "encodings": {},
    }
    for enc in encodings_ or work.encodings:
        cfg = dataclasses.replace(work.cfg, encoding=encodings.get(enc))
        single = measure_training(cfg, 1, peak, steps, repeats)
        log(
            f"  {enc:11s} compile {single['compile_s']:6.2f} s  step {single['step_s'] * 1e3:8.2f}"
            f" ms  {single['tokens_per_s']:10.0f} tok/s  {single['gflop_per_s']:6.1f} GFLOP/s"
            f"  {single['fraction_of_peak']:.0%} of peak"
        )
        out["encodings"][enc] = {"train": single}
        if len(out["encodings"]) == 1:  # evaluation costs alike for every encoding: time one
            ev = out["encodings"][enc]["eval"] = measure_eval(cfg)
            log(
                f"  {'':11s} eval {len(ev['eval_lengths'])} lengths in {ev['eval_s']:.2f} s, "
                f"{ev['eval_compiles']} compiles (buckets {ev['eval_buckets']})"
            )
    cfg = dataclasses.replace(work.cfg, encoding=encodings.get((encodings_ or work.encodings)[0]))
    out["length_buckets"] = []
    for buckets in work.length_buckets:
        bucketed = dataclasses.replace(
            cfg, train=dataclasses.replace(cfg.train, length_buckets=buckets)
        )
        row = measure_training(bucketed, 1, peak, steps, repeats)
        out["length_buckets"].append(row)
        log(
            f"  buckets={buckets:<2d} step {row['step_s'] * 1e3:8.2f} ms  "
            f"{row['sequences_per_s']:8.0f} seq/s  {row['real_tokens_per_s']:8.0f} real tok/s  "
            f"padding {row['padding_fraction']:.0%}  {row['fraction_of_peak']:.0%} of peak"
        )
    if work.length_buckets:  # packing seeds is measured on the other workloads
        ks = ()
    packed = [measure_training(cfg, k, peak, max(steps // k, 2), repeats) for k in ks]
    for row in packed:
        base = packed[0]["tokens_per_s"] / packed[0]["models"]
        row["vs_one_by_one"] = round(row["tokens_per_s"] / (base * row["models"]), 3)
        log(
            f"  packed K={row['models']:<3d} {row['tokens_per_s']:10.0f} tok/s  "
            f"x{row['vs_one_by_one']} of K x one model  {row['fraction_of_peak']:.0%} of peak"
        )
    out["packed"] = packed
    return out


def run_peer_example(log: Callable[[str], None] = print) -> dict[str, Any]:
    """The peer's example experiment end to end with our code: reverse, 1..40 symbols, 2,000
    steps at batch 32, then evaluation at every length 1..100. Wall time and compiles."""
    cfg = dataclasses.replace(
        _peer_cfg(steps=2000, batch_size=32, train_length=40, log_every=100),
        # The peer scores 512 sequences per length (8 batches of 64).
        eval=EvalConfig(lengths=tuple(range(1, 101)), batch_size=512),
    )
    with tempfile.TemporaryDirectory() as tmp, CompileCounter() as counter:
        t0 = time.perf_counter()
        train.train(cfg, Path(tmp) / "run", progress=True)
        wall = time.perf_counter() - t0
        metrics = runs.read_jsonl(Path(tmp) / "run" / runs.METRICS)
        rows = runs.read_jsonl(Path(tmp) / "run" / runs.EVAL)
    eval_s = sum(r["seconds"] for r in rows)
    out = {
        "workload": "peer-example",
        "description": run_peer_example.__doc__.split("\n")[0],
        "wall_s": round(wall, 1),
        "eval_s": round(eval_s, 1),
        "compiles": counter.compiles,
        "xla_compiles": counter.xla_compiles,
        "train_tokens_per_s": float(np.median([r["tokens_per_s"] for r in metrics[1:]])),
        "final_train_accuracy": metrics[-1]["token_accuracy"],
        "accuracy_by_length": {r["length"]: round(r["token_accuracy"], 3) for r in rows},
    }
    log(
        f"peer-example: {out['wall_s']:.0f} s end to end ({out['eval_s']:.0f} s evaluating 100 "
        f"lengths), {out['compiles']} compiles"
    )
    return out


def run(
    workloads: tuple[str, ...] = ("peer", "default", "small-d128"),
    *,
    ks: tuple[int, ...] = (1, 2, 4, 8),
    steps: int = 10,
    repeats: int = 5,
    encodings_: tuple[str, ...] | None = None,
    out: Path = Path("runs/bench"),
    log: Callable[[str], None] = print,
) -> list[Path]:
    """Measure each named workload (`peer-example` end to end) and write OUT/WORKLOAD.json."""
    paths = []
    for name in workloads:
        if name == "peer-example":
            row = run_peer_example(log)
        else:
            row = run_workload(
                name, ks=ks, steps=steps, repeats=repeats, encodings_=encodings_, log=log
            )
        paths.append(write(out, row))
        log(f"Wrote {paths[-1]}")
    return paths


def write(out_dir: Path, row: dict[str, Any]) -> Path:
    path = Path(out_dir) / f"{row['workload']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    runs.write_atomic(path, json.dumps(row, indent=2) + "\n")
    return path
