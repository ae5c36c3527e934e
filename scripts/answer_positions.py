"""Where in the answer does a model go wrong? Token accuracy per answer position, per evaluation
length, from finished runs' final checkpoints.

    python scripts/answer_positions.py RUN_DIR... [--lengths 8 12 16] [--out positions.json]
    python scripts/answer_positions.py RUN_DIR... --lengths $(seq 30 2 100) --overall \
        [--plot scan.png]                # the whole answer's accuracy on a dense length grid

Exact match beyond the training length says that an answer is wrong, not where. This script
re-scores the batch that evaluation scored at each length (the same held-out sequences and
positions, teacher forced) and splits token accuracy by the index of the scored token in the
answer: 0 is the first answer token, the last is END where the task has one. It prints one row
per length (mean over the given runs) and writes them, per run, to --out as JSON. The mean of a
row, weighted by how many tokens each position scores, is the run's token accuracy in eval.jsonl.
With --overall it prints, per length, the whole answer's token accuracy and exact match (those
of eval.jsonl, at any lengths), and --plot draws token accuracy against length, one line per
run: a sweep evaluates every 1x of the training length, which can step over a narrow peak.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from matplotlib.figure import Figure

from pe_research import runs
from pe_research.essay import analysis
from pe_research.tasks import bucket
from pe_research.training import evaluate


def answer_accuracy(run_dir: Path, lengths: list[int] | None = None) -> dict[int, dict]:
    """Evaluation length -> {"accuracy": token accuracy per answer position, "tokens": how many
    tokens each position scores} of one finished run, from its final checkpoint."""
    cfg = runs.load_config(run_dir)
    graphdef, params, _ = analysis.trained_model(run_dir, cfg)

    @jax.jit
    def predict_BL(params, tokens_BL, pos_BL, valid_BL):
        return jnp.argmax(nnx.merge(graphdef, params)(tokens_BL, pos_BL, valid_BL), -1)

    root = jax.random.key(cfg.eval.seed)
    out = {}
    for n in lengths or cfg.eval.lengths:
        width = bucket(cfg.task.seq_len(n, cfg.model.causal))
        batch, pos_BL = evaluate.eval_inputs(cfg, root, jnp.int32(n), width)
        right_BL = np.asarray(predict_BL(params, batch.inputs, pos_BL, batch.valid)) == np.asarray(
            batch.targets
        )
        mask_BL = np.asarray(batch.loss_mask).astype(bool)
        index_BL = np.cumsum(mask_BL, axis=-1) - 1  # each scored token's index in the answer
        size = int(index_BL[mask_BL].max()) + 1
        tokens = [int((mask_BL & (index_BL == k)).sum()) for k in range(size)]
        accuracy = [float(right_BL[mask_BL & (index_BL == k)].mean()) for k in range(size)]
        scored_B = mask_BL.any(-1)  # rows of a partly filled batch score no token
        all_right_B = (right_BL | ~mask_BL).all(-1)
        out[int(n)] = {
            "accuracy": accuracy,
            "tokens": tokens,
            "token_accuracy": float(right_BL[mask_BL].mean()),
            "exact_match": float(all_right_B[scored_B].mean()),
        }
    return out


def plot_scan(per_run: dict[str, dict[int, dict]], path: Path) -> None:
    """Token accuracy of the whole answer against evaluation length, one line per run."""
    fig = Figure(figsize=(7, 3.2))  # no pyplot: nothing global to close, as sweeps/plotting.py
    ax = fig.subplots()
    for name, rows in per_run.items():
        lengths = sorted(rows)
        ax.plot(lengths, [rows[n]["token_accuracy"] for n in lengths], marker=".",
                label=f"{Path(name).parent.name} {Path(name).name.split('-')[0]}")  # fmt: skip
    ax.set(xlabel="evaluation length", ylabel="token accuracy", ylim=(0, 1.02))
    ax.legend(fontsize=7)  # encoding and seed: the run folder's parent and name
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dirs", nargs="+", type=Path)
    parser.add_argument("--lengths", nargs="*", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--overall",
        action="store_true",
        help="print the whole answer's token accuracy and exact match per length",
    )
    parser.add_argument(
        "--plot",
        type=Path,
        default=None,
        help="write token accuracy against length (one line per run) to a PNG",
    )
    args = parser.parse_args()
    for d in args.run_dirs:
        if not runs.is_finished(d):
            raise SystemExit(
                f"{d} is not a finished run directory: give the run folders of a finished "
                "sweep (e.g. runs/addition/<task>/<encoding>/seed0-*)."
            )
    per_run = {str(d): answer_accuracy(d, args.lengths) for d in args.run_dirs}
    lengths = list(next(iter(per_run.values())))
    if args.overall:
        print(f"length: token accuracy, exact match; mean over {len(per_run)} run(s):")
        for n in lengths:
            acc, em = (np.mean([r[n][k] for r in per_run.values()])
                       for k in ("token_accuracy", "exact_match"))  # fmt: skip
            print(f"{n:>5}: {acc:.3f} {em:.3f}")
    else:
        print(f"token accuracy per answer position, mean over {len(per_run)} run(s):")
        for n in lengths:
            rows = [r[n]["accuracy"] for r in per_run.values()]
            mean = np.mean(rows, axis=0)
            print(f"{n:>5}: " + " ".join(f"{a:.2f}" for a in mean))
    if args.plot:
        plot_scan(per_run, args.plot)
        print(f"Wrote {args.plot}")
    if args.out:
        args.out.write_text(json.dumps(per_run, indent=1))
        print(f"Wrote {args.out}")


if __name__ == "__main__":
    main()
