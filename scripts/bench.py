"""Run every named speed workload and write one markdown table of the results.

    python scripts/bench.py [--out runs/bench] [--skip-example]

Runs `pe-research bench` for peer, peer-curriculum, default and small-d128 (and, unless
--skip-example, the peer's example experiment end to end, about 5 minutes on 2 CPU cores), then
writes OUT/summary.md from the JSON files. Compare with DeepMind's randomized_positional_encodings
on the same machine by timing its own jitted update on its curriculum (lengths uniform in 1..40,
one compiled program per length) next to `peer-curriculum`, and at length 40 next to `peer`.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def table(rows: list[dict]) -> str:
    lines = [
        "| workload | encoding | compile s | step ms | tokens/s | GFLOP/s | of peak | eval s "
        "| eval compiles |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        for enc, m in row["encodings"].items():
            t, e = m["train"], m.get("eval")
            ev = f"{e['eval_s']:.1f} | {e['eval_compiles']}" if e else "- | -"
            lines.append(
                f"| {row['workload']} | {enc} | {t['compile_s']:.1f} | {t['step_s'] * 1e3:.1f} "
                f"| {t['tokens_per_s']:.0f} | {t['gflop_per_s']:.1f} | {t['fraction_of_peak']:.0%}"
                f" | {ev} |"
            )
    lines += ["", "| workload | length buckets | step ms | sequences/s | real tokens/s | padding |"]
    lines += ["|---|---|---|---|---|---|"]
    for row in rows:
        for b in row.get("length_buckets", []):
            lines.append(
                f"| {row['workload']} | {b['length_buckets']} | {b['step_s'] * 1e3:.1f} "
                f"| {b['sequences_per_s']:.0f} | {b['real_tokens_per_s']:.0f} "
                f"| {b['padding_fraction']:.0%} |"
            )
    lines += ["", "| workload | K | tokens/s | of K x one model | of peak |"]
    lines += ["|---|---|---|---|---|"]
    for row in rows:
        for p in row["packed"]:
            lines.append(
                f"| {row['workload']} | {p['models']} | {p['tokens_per_s']:.0f} "
                f"| {p['vs_one_by_one']:.2f} | {p['fraction_of_peak']:.0%} |"
            )
    peaks = ", ".join(f"{r['workload']} {r['matmul_peak_gflop_per_s']:.0f}" for r in rows)
    return "\n".join(lines + ["", f"fp32 matmul peak measured in each run (GFLOP/s): {peaks}"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("runs/bench"))
    parser.add_argument("--skip-example", action="store_true")
    args = parser.parse_args()
    # Imported after parsing: --help and argument errors answer without loading jax.
    from pe_research import bench, runs

    rows = []
    for name in bench.WORKLOADS:
        rows.append(bench.run_workload(name))
        bench.write(args.out, rows[-1])
    text = table(rows)
    if not args.skip_example:
        example = bench.run_peer_example()
        bench.write(args.out, example)
        text += (
            f"\n\npeer-example: {example['wall_s']:.0f} s end to end, "
            f"{example['eval_s']:.0f} s of it evaluating 100 lengths, "
            f"{example['compiles']} XLA compiles\n"
        )
    runs.write_atomic(args.out / "summary.md", text + "\n")
    print(text)
    print(f"Wrote {args.out / 'summary.md'} and a JSON file per workload")


if __name__ == "__main__":
    main()
