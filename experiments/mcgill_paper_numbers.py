"""Kazemnejad et al. (2023)'s numbers on the tasks experiments/mcgill.py runs, recomputed from
their released per-run results, so that "paper vs here" compares like with like. A tool beside
the experiment, not one itself (it has no `runs`).

    python experiments/mcgill_paper_numbers.py PATH/TO/results/sanity_check.jsonl

The file is McGill-NLP/length-generalization's `results/sanity_check.jsonl` (one JSON object per
W&B run of the "sanity check" tasks: copy, reverse and their variants). Each trained model is a
row with `job_type == "best_run_seed_exp"`; its `sum__pred/test_acc_N` is the fraction of the
test examples of length N (500 per length, 21..40) whose greedily generated answer is exactly
right, and `sum__pred/test_acc_overall` the same over all of them (the number their notebook
notebooks/plot_aggregate_final.ipynb ranks).

Printed, for experiments/mcgill.py: per task and positional encoding the mean and sample std over
the 3 seeds of the overall exact match, the mean over seeds at every test length, and the mean
reciprocal rank over exactly these tasks computed as their notebook does (one query per task and
seed; encodings ranked by overall exact match, best first, ties in the order the encodings first
appear in the file, pandas' rank(method="first"); MRR = mean over queries of 1 / rank).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

# (their dataset, their split) -> our task; splits named as in make_copy_dataset.py and
# make_reverse_dataset.py (cmc: copy_multi_char, rsc: repeat_single_char, mc: multi_char).
TASKS = {
    ("s2s_copy", "cmc_tr20_ts40"): "copy",
    ("s2s_copy", "rsc_tr20_ts40"): "count_copy",
    ("s2s_reverse", "mc_tr20_ts40"): "reverse",
}
# Their position_encoding_type -> the name experiments/mcgill.py gives the paper's encoding.
ENCODINGS = {
    "none": "nope",
    "t5_relative_bias": "t5",
    "alibi": "alibi",
    "rotary": "rope",  # rotates 25% of each head: CustomT5Attention sets rotary_dim = d_head / 4
    "abs_sinusoid": "sinusoidal",
}
TEST_LENGTHS = tuple(range(21, 41))


def read_runs(path: Path) -> list[dict]:
    """One dict per trained model of our tasks: task, encoding, seed, overall, by_length."""
    out = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("job_type") != "best_run_seed_exp":
            continue
        task = TASKS.get((row.get("cfg__dataset.name"), row.get("cfg__dataset.split")))
        if task is None:
            continue
        out.append(
            {
                "task": task,
                "encoding": ENCODINGS[row["cfg__model.position_encoding_type"]],
                "seed": int(row["cfg__global_vars.seed"]),
                "overall": float(row["sum__pred/test_acc_overall"]),
                "by_length": [float(row[f"sum__pred/test_acc_{n}"]) for n in TEST_LENGTHS],
            }
        )
    return out


def per_task(runs: list[dict]) -> dict[tuple[str, str], dict]:
    """(task, encoding) -> mean and std over seeds of the overall exact match, the per-length
    means over seeds, and the seeds."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for run in runs:
        groups[(run["task"], run["encoding"])].append(run)
    out = {}
    for key, group in groups.items():
        overall = [r["overall"] for r in group]
        out[key] = {
            "mean": statistics.fmean(overall),
            "std": statistics.stdev(overall) if len(overall) > 1 else 0.0,
            "seeds": sorted(r["seed"] for r in group),
            "by_length": [
                statistics.fmean(r["by_length"][i] for r in group) for i in range(len(TEST_LENGTHS))
            ],
        }
    return out


def mean_reciprocal_rank(runs: list[dict]) -> dict[str, float]:
    """Encoding -> MRR over (task, seed) queries, ranked as their notebook ranks them."""
    order = list(dict.fromkeys(r["encoding"] for r in runs))  # first appearance in the file
    queries: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    for run in runs:
        queries[(run["task"], run["seed"])][run["encoding"]] = run["overall"]
    reciprocal: dict[str, list[float]] = defaultdict(list)
    for scores in queries.values():
        if set(scores) != set(order):  # their notebook drops queries that miss an encoding
            continue
        ranked = sorted(order, key=lambda e: (-scores[e], order.index(e)))
        for rank, encoding in enumerate(ranked, start=1):
            reciprocal[encoding].append(1.0 / rank)
    return {e: statistics.fmean(v) for e, v in reciprocal.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sanity_check", type=Path, help="results/sanity_check.jsonl")
    args = parser.parse_args()
    runs = read_runs(args.sanity_check)
    if not runs:
        raise SystemExit(f"{args.sanity_check}: no best_run_seed_exp rows of copy or reverse.")
    table = per_task(runs)
    print(f"# {len(runs)} runs from {args.sanity_check}")
    print("PAPER_EXACT_MATCH = {  # (task, encoding): (mean, std) over seeds, lengths 21-40")
    for (task, enc), v in sorted(table.items()):
        print(f"    ({task!r}, {enc!r}): ({v['mean']:.4f}, {v['std']:.4f}),  # seeds {v['seeds']}")
    print("}")
    print("PAPER_BY_LENGTH = {  # (task, encoding): mean over seeds at lengths 21, 22, ..., 40")
    for (task, enc), v in sorted(table.items()):
        values = ", ".join(f"{x:.3f}" for x in v["by_length"])
        print(f"    ({task!r}, {enc!r}): ({values}),")
    print("}")
    mrr = mean_reciprocal_rank(runs)
    print("PAPER_MRR = {  # over (task, seed) queries of copy, count_copy, reverse")
    for enc, value in sorted(mrr.items(), key=lambda kv: -kv[1]):
        print(f"    {enc!r}: {value:.4f},")
    print("}")


if __name__ == "__main__":
    main()
