"""Search training recipes under which the main job's models learn their tasks.

    python scripts/search_recipes.py                      # every recipe on all 15 runs
    python scripts/search_recipes.py --recipes base long --runs copy:nope reverse:alibi

It searches over the main job's first grid, 5 encodings x 3 tasks (experiments/default.py now
runs two of them: docs/notes/main-job-recipe.md), trained on 1-16 symbols and evaluated at
1x-8x. A run is fit when its exact match at the training length (16) reaches 0.95.
Each recipe here keeps the task, the training lengths and the evaluation, and changes how the
model is trained (learning rate and schedule, batch, width, depth, heads, how lengths are
drawn into length buckets, the step cap); every run trains with train.stop_when_fit, so a run
stops at its first fit check and a recipe is charged only the steps it needs.

Each (recipe, run) appends one JSON row to OUT/search.jsonl: fit, first fit step, exact match
at 16, steps trained and wall seconds including compilation (the persistent compilation cache
is off here, so the times are those of an empty cache). A rerun skips the rows already there.
The table printed at the end (and written to OUT/search.md) gives per recipe the fit count and
the total wall time, the two numbers the main job is held to: at least 13 of 15 fit within 10
minutes on the 2-core development machine.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("PE_RESEARCH_JAX_CACHE", "")  # honest compile times: no cache

from tqdm.auto import tqdm  # noqa: E402

from pe_research import encodings, runs, tasks, train  # noqa: E402
from pe_research.config import ModelConfig, RunConfig, TrainConfig  # noqa: E402

TASKS = ["copy", "reverse", "offset"]  # offset: k = 3
ENCODINGS = ["nope", "sinusoidal", "learned", "rope", "alibi"]

DEEP, BUCKETS = dict(num_layers=4), dict(length_buckets=4)
HOT2K = dict(steps=2000, learning_rate=3e-3, warmup_steps=200, **BUCKETS)  # deep-hot2k's training

# name -> (model changes, train changes); every recipe trains until fit, checked every 100 steps.
RECIPES: dict[str, tuple[dict, dict]] = {
    # 500 steps, one length bucket.
    "old": ({}, dict(steps=500)),
    "base": ({}, dict(steps=3000, length_buckets=4)),
    "wide": (dict(d_model=128, num_heads=8, mlp_dim=512), dict(steps=3000, length_buckets=4)),
    "deep": (DEEP, dict(steps=3000, learning_rate=1e-3, **BUCKETS)),
    "deep3": (dict(num_layers=3), dict(steps=3000, length_buckets=4, learning_rate=2e-3)),
    "deep-long": (DEEP, dict(steps=5000, learning_rate=1e-3, **BUCKETS)),
    "big-batch": ({}, dict(steps=3000, length_buckets=4, batch_size=128)),
    "hot": ({}, dict(steps=3000, length_buckets=4, learning_rate=1e-2, warmup_steps=200)),
    "cool": ({}, dict(steps=3000, length_buckets=4, learning_rate=1e-3)),
    # For the 10-minute target: the deep model, trained in fewer steps or cheaper ones.
    "deep-2e3": (DEEP, dict(steps=3000, learning_rate=2e-3, warmup_steps=100, **BUCKETS)),
    "deep-hot": (DEEP, dict(steps=3000, learning_rate=3e-3, warmup_steps=200, **BUCKETS)),
    "deep-hot2k": (DEEP, HOT2K),
    "deep-5e3": (DEEP, dict(steps=2000, learning_rate=5e-3, warmup_steps=300, **BUCKETS)),
    "deep-hot1500": (DEEP, dict(steps=1500, learning_rate=3e-3, warmup_steps=150, **BUCKETS)),
    "deep-b32": (DEEP, dict(steps=6000, learning_rate=1e-3, batch_size=32, **BUCKETS)),
    # The fit margin: deep-hot2k with one change each.
    "hot2k-b2-98": (DEEP, dict(**HOT2K, adam_b2=0.98)),
    "hot2k-b2-95": (DEEP, dict(**HOT2K, adam_b2=0.95)),
    "hot2k-wd-0.1": (DEEP, dict(**HOT2K, weight_decay=0.1)),
    "hot2k-linear": (DEEP, dict(**HOT2K, lr_schedule="linear")),
}


def config(recipe: str, task: str, encoding: str) -> RunConfig:
    model, training = RECIPES[recipe]
    return RunConfig(
        task=tasks.get(task),
        encoding=encodings.get(encoding),
        model=ModelConfig(**model),
        train=TrainConfig(
            train_length=16, stop_when_fit=True, fit_check_every=100, log_every=100, **training
        ),
    )


def search(recipes: list[str], pairs: list[tuple[str, str]], out: Path) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "search.jsonl"
    rows = runs.read_jsonl(path) if path.exists() else []
    done = {(r["recipe"], r["task"], r["encoding"]) for r in rows}
    todo = [(r, t, e) for r in recipes for t, e in pairs if (r, t, e) not in done]
    for recipe, task, encoding in tqdm(todo, desc="recipes x runs"):
        cfg = config(recipe, task, encoding)
        run_dir = out / recipe / task / encoding
        t0 = time.perf_counter()
        train.train(cfg, run_dir, overwrite=True, progress=False)
        seconds = time.perf_counter() - t0
        (result, *_) = runs.eval_rows([run_dir])
        trained = runs.read_jsonl(run_dir / runs.METRICS)[-1]["step"]
        row = dict(
            recipe=recipe, task=task, encoding=encoding, fit=result["fit"],
            fit_step=result["fit_step"], exact_match_16=result["fit_exact_match"],
            steps=trained, seconds=round(seconds, 1),
        )  # fmt: skip
        rows.append(row)
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")
        tqdm.write(json.dumps(row))
    return rows


def table(rows: list[dict], pairs: list[tuple[str, str]]) -> str:
    """Markdown: per recipe, exact match at 16 (and the first fit step) of each run, the fit
    count and the total wall time."""
    by = {(r["recipe"], r["task"], r["encoding"]): r for r in rows}
    recipes = list(dict.fromkeys(r["recipe"] for r in rows))
    head = ["recipe", *(f"{t} {e}" for t, e in pairs), "fit", "wall s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for recipe in recipes:
        cells, fit, seconds, complete = [], 0, 0.0, True
        for t, e in pairs:
            r = by.get((recipe, t, e))
            if r is None:
                cells.append("-")
                complete = False
                continue
            fit += bool(r["fit"])
            seconds += r["seconds"]
            em = f"{r['exact_match_16']:.2f}"
            cells.append(f"**{em}**@{r['fit_step']}" if r["fit"] else em)
        total = f"{seconds:.0f}" + ("" if complete else " (partial)")
        lines.append("| " + " | ".join([recipe, *cells, f"{fit}/{len(pairs)}", total]) + " |")
    legend = (
        "\nCells: exact match at the training length (16); **bold**@N: fit, first at step N. "
        "wall s: training, compilation and evaluation of the runs, summed."
    )
    return "\n".join(lines) + legend + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    parser.add_argument(
        "--runs", nargs="+", default=[f"{t}:{e}" for t in TASKS for e in ENCODINGS],
        help="TASK:ENCODING pairs of the main job (default: all 15)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("runs/recipe_search"))
    args = parser.parse_args()
    pairs = []
    for pair in args.runs:
        task, _, encoding = pair.partition(":")
        if task not in TASKS or encoding not in ENCODINGS:
            parser.error(f"--runs takes TASK:ENCODING with TASK in {list(TASKS)} and ENCODING "
                         f"in {ENCODINGS}, got {pair!r}")  # fmt: skip
        pairs.append((task, encoding))
    rows = search(args.recipes, pairs, args.out)
    text = table([r for r in rows if (r["task"], r["encoding"]) in pairs], pairs)
    (args.out / "search.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
