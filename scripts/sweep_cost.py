"""What an experiment's sweep will cost on this machine, before running it: its trainings
(seeds packed, as the sweep trains them) x steps x the step time measured here.

    python scripts/sweep_cost.py mcgill [--scale cpu] [--steps 10] [--probes 2]

The step time of every training is not measured (each would compile): the script times the
cheapest and the most expensive trainings by matmul FLOPs per step (`--probes 2`; more probes
spread between them), fits seconds = a + b x FLOPs through them, and predicts the others. A run
that trains until fit may stop before the step cap, so the time at the cap is an upper bound;
evaluation and fit checks are added at the throughput of the measured steps (FLOPs / measured
FLOP/s), a rough figure. Timings on a shared machine move with its load: the fp32 matmul peak is
measured in the same run, so that numbers from different days can be compared through it.
"""

from __future__ import annotations

import argparse
import statistics


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("experiment")
    parser.add_argument("--scale", default=None)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per window")
    parser.add_argument("--repeats", type=int, default=3, help="timed windows (median taken)")
    parser.add_argument("--probes", type=int, default=2, help="trainings timed")
    args = parser.parse_args()
    # Imported after parsing: --help and argument errors answer without loading jax.
    from pe_research import bench, train
    from pe_research.sweeps import cost, experiments
    from pe_research.training import flops

    module = experiments.load_experiment(args.experiment)
    configs = experiments.experiment_runs(module, args.scale)
    groups: dict = {}
    for cfg in configs:
        groups.setdefault(train.group_key(cfg), []).append(cfg)
    members = list(groups.values())
    step_flops = [flops.train_step_flops(g[0], len({c.seed for c in g})) for g in members]
    order = sorted(range(len(members)), key=lambda i: step_flops[i])
    picks = sorted({order[round(k * (len(order) - 1) / max(args.probes - 1, 1))]
                    for k in range(args.probes)})  # fmt: skip

    peak = bench.measure_matmul_peak()
    print(f"{args.experiment} ({args.scale or 'cpu'}): {len(configs)} runs, {len(members)} "
          f"trainings; fp32 matmul peak here {peak / 1e9:.1f} GFLOP/s")  # fmt: skip
    measured = []
    for i in picks:
        group = members[i]
        seeds = sorted({c.seed for c in group})
        prog = train.build_program(group[0], seeds)
        step_s = statistics.median(bench.time_steps(prog, args.steps, args.repeats))
        measured.append((step_flops[i], step_s))
        print(f"  timed {group[0].task.name} / {group[0].encoding.label()} ({len(seeds)} seeds "
              f"packed): {step_s * 1e3:.0f} ms per step, compile {prog.compile_s:.0f} s, "
              f"{step_flops[i] / step_s / 1e9:.1f} GFLOP/s")  # fmt: skip
    if len(measured) > 1 and measured[-1][0] > measured[0][0]:
        (f0, t0), (f1, t1) = measured[0], measured[-1]
        slope = (t1 - t0) / (f1 - f0)
    else:
        slope = measured[0][1] / measured[0][0]
    (f0, t0) = measured[0]

    def seconds(step_f: float) -> float:
        return max(t0 + slope * (step_f - f0), 0.0)

    train_s = sum(seconds(f) * g[0].train.steps for f, g in zip(step_flops, members, strict=True))
    rate = statistics.fmean(f / t for f, t in measured)  # FLOP/s of the measured steps
    est = cost.estimate(configs)
    other_s = (est.check_flops + est.eval_flops) / rate
    print(
        f"  at the step cap: training {train_s / 3600:.2f} h + evaluation and fit checks "
        f"about {other_s / 3600:.2f} h = {(train_s + other_s) / 3600:.2f} h on one process "
        f"(the sum of {len(members)} trainings of at most "
        f"{max(g[0].train.steps for g in members):,} steps)"
    )
    print("  " + est.text())


if __name__ == "__main__":
    main()
