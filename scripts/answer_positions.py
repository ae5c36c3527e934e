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

Result on addition's headline model (experiments/addition.py: learned absolute + coupling, its
table initialised as the paper's; its three seeds of 2026-12-02, commit 2340436, all fit):
every sum digit but the last stays at .91-1.00 to 24 digits, while the last digit (the carry
out) and END fall to .70 / .66 at 12 digits, .56 / .48 at 16 and .57 / .45 at 24 (all 1.00 at
8, the training length): the model adds beyond its training length but does not know where the
sum stops. In Cho et al.'s block (the experiment since 2026-12-03; its three seeds of commit
2a30637, 2026-12-05, two stopped at their fit at .95, the third at .945 at its step cap; 33 s):
the same picture, the other sum digits .95-1.00 to 16 digits, the carry out and END .86 / .93 at
12, .85 / .90 at 16, .87 / .78 at 24 (END .50 at 32).

Result of --overall on the rotary copy runs of the leaderboard (experiments/leaderboard.py: 4
layers, d_model 64, 4 heads of 16, base 10,000, trained on 1-16, all fit at 16; commit ed5da60):
RoPE seed 0, xPos seed 0 and the RoPE/NoPE mixture seed 1 at 16 and every even length 20-130
(1 min 52 s; docs/leaderboard/copy_rotary_length_scan.png). Token accuracy is .06-.10 away from
the peaks beyond 16 and peaks at 36 (.78 / .79 / .92), 56 (.15 / .10 / .32), 76 (.15 / .10 /
.34), 96 (.36 / .32 / .54) and 116 (.09 / .08 / .23): one peak every 20 symbols, at 16 + k x
19.87, where 19.87 = 2 pi / 10000^(-1/8) is the wavelength of a head's second rotary frequency.
There the distance from an answer token back to its source (n + 1) differs from a trained one by
whole turns of that frequency, and the model reads it as trained (a reading of the periodicity,
not a measured mechanism). It explains the spike at 96 of every rotary encoding in the
leaderboard's copy row (RoPE, xPos, M-RoPE and the mixture, .15 to .54 against .06-.11 at the
other lengths): the row's 1x-8x lengths, 16, 32, ..., 128, meet only that one of the five peaks.
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
