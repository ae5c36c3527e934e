"""This project against DeepMind's randomized_positional_encodings on the peer's own curriculum,
timed side by side in alternating windows on one machine.

    python scripts/peer_side_by_side.py --peer-src DIR --peer-python PY [--buckets 8]
        [--rounds 6] [--steps 20] [--out runs/bench]

The peer: its own code (scripts/peer_worker.py runs it under PY, a Python with the peer's
requirements: dm-haiku, chex, einshape, optax, and the same jax as this project) training its
default encoder on binary reverse with lengths uniform in 1..40, one length per batch of 128,
with dropout 0.1 as it trains. DIR holds its checkout as `DIR/randomized_positional_encodings/`
(for example `git archive` of a fetched copy). Here: `pe-research bench`'s peer-curriculum
workload, the same encoder (bench.PEER_MODEL: post-LayerNorm, ReLU, dropout 0.1) and RoPE, the
same lengths drawn per sequence in --buckets length buckets, batch 128.

Both sides compile first (the peer one program per length, here one), then take turns: each
round times --steps steps of the peer, then of this project (the order alternates), so a
machine whose speed drifts slows both alike. The fp32 matmul peak is measured between rounds.
Writes OUT/peer_side_by_side.json (every window, medians, the ratio of sequences per second, the
fraction of the peak each reaches) and prints a table.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

# jax and pe_research are imported where they are used, after parsing: --help and argument
# errors answer without loading them.


def peer_flops_per_step(cfg, max_length: int) -> float:
    """The peer's matmul FLOPs per step, averaged over its curriculum: batch x (forward at 2n
    tokens, its input then one empty token per output, no separator) x 3."""
    from pe_research.training.flops import matmul_flops

    per_length = [matmul_flops(cfg, 2 * n) for n in range(1, max_length + 1)]
    return 3 * cfg.train.batch_size * statistics.mean(per_length)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--peer-src", type=Path, required=True)
    parser.add_argument("--peer-python", default="python")
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("runs/bench"))
    args = parser.parse_args()
    if not (args.peer_src / "randomized_positional_encodings").is_dir():
        sys.exit(
            f"{args.peer_src}/randomized_positional_encodings/ not found: --peer-src is the folder "
            "that holds the peer's checkout under that name."
        )
    import jax

    from pe_research import bench, runs, train

    cfg = bench.WORKLOADS["peer-curriculum"].cfg
    cfg = dataclasses.replace(
        cfg, train=dataclasses.replace(cfg.train, length_buckets=args.buckets)
    )
    max_length = cfg.train.train_length
    worker = Path(__file__).with_name("peer_worker.py")
    peer = subprocess.Popen(
        [args.peer_python, str(worker), "--src", str(args.peer_src), "--batch",
         str(cfg.train.batch_size), "--max-length", str(max_length)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip

    def ask_peer(steps: int, seed: int) -> dict:
        peer.stdin.write(f"{steps} {seed}\n")
        peer.stdin.flush()
        line = peer.stdout.readline()
        if not line:
            sys.exit(f"the peer's worker exited (code {peer.wait()}); its errors are above.")
        return json.loads(line)

    print("compiling this project's step ...", flush=True)
    prog = train.build_program(cfg, [0])
    state = prog.state
    print(f"  {prog.compile_s:.1f} s; waiting for the peer to compile its {max_length} programs")
    ready = json.loads(peer.stdout.readline() or "{}")
    if not ready.get("ready"):
        sys.exit(f"the peer's worker did not start (code {peer.wait()}); its errors are above.")
    print(f"  peer: {ready['compile_s']:.1f} s (jax {ready['jax']}, haiku {ready['haiku']})")

    def ours(steps: int) -> float:
        nonlocal state
        t0 = time.perf_counter()
        for _ in range(steps):
            state, metrics = prog.run(state)
        jax.block_until_ready((state, metrics))
        return (time.perf_counter() - t0) / steps

    ours(2)  # warm-up
    ask_peer(2, 10_000)
    windows, peaks = [], []
    for r in range(args.rounds):
        peaks.append(bench.measure_matmul_peak())
        first_peer = r % 2 == 0
        here_s = None if first_peer else ours(args.steps)
        peer_row = ask_peer(args.steps, r)
        peer_s = peer_row["s_per_step"]
        here_s = ours(args.steps) if first_peer else here_s
        windows.append({"round": r, "peer_s_per_step": peer_s, "here_s_per_step": here_s,
                        "peer_mean_length": peer_row["mean_length"]})  # fmt: skip
        print(f"  round {r}: peer {peer_s * 1e3:7.1f} ms/step   here {here_s * 1e3:7.1f} ms/step "
              f"  peak {peaks[-1] / 1e9:.0f} GFLOP/s", flush=True)  # fmt: skip
    peer.stdin.close()
    peer.wait()

    batch = cfg.train.batch_size
    peer_s = statistics.median(w["peer_s_per_step"] for w in windows)
    here_s = statistics.median(w["here_s_per_step"] for w in windows)
    peak = statistics.median(peaks)
    here_flops, peer_flops = bench.train_step_flops(cfg), peer_flops_per_step(cfg, max_length)
    real = batch * bench.real_tokens_per_sequence(cfg)
    out = {
        "date": datetime.date.today().isoformat(),
        "versions": runs.versions(),
        "peer_versions": {"jax": ready["jax"], "haiku": ready["haiku"]},
        "length_buckets": args.buckets,
        "batch_size": batch,
        "train_lengths": f"uniform in 1..{max_length}",
        "dropout": cfg.model.dropout,
        "matmul_peak_gflop_per_s": round(peak / 1e9, 1),
        "peer_compile_s": ready["compile_s"],
        "here_compile_s": round(prog.compile_s, 2),
        "peer_s_per_step": round(peer_s, 4),
        "here_s_per_step": round(here_s, 4),
        "peer_sequences_per_s": round(batch / peer_s, 1),
        "here_sequences_per_s": round(batch / here_s, 1),
        "here_real_tokens_per_s": round(real / here_s, 1),
        "ratio_sequences_per_s": round(peer_s / here_s, 3),
        "peer_fraction_of_peak": round(peer_flops / peer_s / peak, 3),
        "here_fraction_of_peak": round(here_flops / here_s / peak, 3),
        "windows": windows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    runs.write_atomic(args.out / "peer_side_by_side.json", json.dumps(out, indent=1) + "\n")
    print(
        f"\npeer {peer_s:.3f} s/step ({out['peer_sequences_per_s']:.0f} seq/s, "
        f"{out['peer_fraction_of_peak']:.0%} of peak), here {here_s:.3f} s/step "
        f"({out['here_sequences_per_s']:.0f} seq/s, {out['here_fraction_of_peak']:.0%} of peak, "
        f"{args.buckets} buckets): {out['ratio_sequences_per_s']:.2f}x the peer's sequences/s "
        f"at an fp32 peak of {peak / 1e9:.0f} GFLOP/s\nWrote {args.out / 'peer_side_by_side.json'}"
    )


if __name__ == "__main__":
    main()
