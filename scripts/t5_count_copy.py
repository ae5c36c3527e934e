"""Why does T5's relative bias score 0 on count_copy beyond the training length here?

    python scripts/t5_count_copy.py [--out runs/t5_count_copy] [--seeds 0 1 2] [--preset fit]

Kazemnejad et al. (2023) report T5 at .77 exact match on count_copy at lengths 21-40 after
training on <= 20; `pe-research sweep mcgill` gets 1.0 in distribution and 0.00 beyond. This
script tests one explanation: T5 buckets relative distances (32 buckets, unidirectional: 16
exact, then log-spaced up to 128), a count_copy sequence of n symbols spans distances up to
2n, so training on n <= 20 only ever reads buckets 0-23, and evaluation at n = 24-40 reads
buckets 24-28 too, whose rows hold their random initialisation (std d_model**-0.5) because no
gradient ever reached them.

It trains the McGill experiment's CPU T5 run on count_copy (same config, the seeds packed, until
fit), then evaluates the trained parameters three ways at 20-40:

  as trained    the untrained rows keep their random initialisation
  zeroed        the untrained rows set to 0 (no bias for distances training never saw)
  clamped       the untrained rows set to the row of the longest trained distance, as if the
                bucket scheme ended at the training range

If the zeroed or clamped parameters generalize where the trained ones do not, the untrained rows
are the cause, not model size or training length. It also prints, per layer and head, the size
of the trained rows next to the untrained ones. Rows go to OUT/t5_count_copy.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from pe_research import encodings, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.encodings.bias import t5_relative_bucket
from pe_research.sweeps.experiments import FIT_MODEL, FIT_TRAIN
from pe_research.tasks import bucket
from pe_research.training import evaluate

LENGTHS = (20, 24, 28, 32, 36, 40)


def reached_buckets(cfg: RunConfig, n: int) -> set[int]:
    """Buckets of every causal distance within a sequence of n symbols."""
    width = cfg.task.seq_len(n, cfg.model.causal)
    enc = cfg.encoding
    b = t5_relative_bucket(-jnp.arange(width), bidirectional=False,
                           num_buckets=enc.num_buckets, max_distance=enc.max_distance)  # fmt: skip
    return {int(x) for x in np.asarray(b)}


def _bucket(cfg: RunConfig, distance: int) -> int:
    enc = cfg.encoding
    rel = jnp.int32(-distance)
    b = t5_relative_bucket(rel, bidirectional=False, num_buckets=enc.num_buckets,
                           max_distance=enc.max_distance)  # fmt: skip
    return int(b)


def stop_counts(cfg: RunConfig, graphdef, params_S) -> dict[int, list[int]]:
    """Per evaluation length n, for every seed and evaluated sequence, how many answer symbols
    the model emits (argmax under teacher forcing) before its first END (n is right)."""
    out = {}
    root = jax.random.key(cfg.eval.seed)
    for n in LENGTHS:
        batch, pos_BL = evaluate.eval_inputs(cfg, root, jnp.int32(n), bucket(2 * n + 1))
        counts = []
        for k in range(jax.tree.leaves(params_S)[0].shape[0]):
            model = nnx.merge(graphdef, jax.tree.map(lambda x, k=k: x[k], params_S))
            pred_BL = np.asarray(jnp.argmax(model(batch.inputs, pos_BL, batch.valid), -1))
            for b, mask in enumerate(np.asarray(batch.loss_mask)):
                ends = np.flatnonzero(pred_BL[b, mask] == cfg.task.end)
                counts.append(int(ends[0]) if len(ends) else n + 1)
        out[n] = counts
    return out


def with_rows(params_S, untrained: list[int], source: int | None):
    """The parameters with the untrained bucket rows of every layer's table set to 0 (source
    None) or to the row `source`."""

    def edit(path, x):
        if "table_NH" not in jax.tree_util.keystr(path):
            return x
        fill = jnp.zeros_like(x[:, 0]) if source is None else x[:, source]
        return x.at[:, jnp.array(untrained)].set(fill[:, None])

    return jax.tree_util.tree_map_with_path(edit, params_S)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/t5_count_copy"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--steps", type=int, default=None, help="step cap (default: the preset's, 500 or 2,000)"
    )
    parser.add_argument(
        "--preset", choices=["earlier", "fit"], default="earlier",
        help="earlier: the McGill CPU preset before issue 14 (2 layers, 500 steps, batch 32); "
        "fit: today's (4 layers, the main job's recipe until fit, at training length 20)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.preset == "fit":
        model, training = FIT_MODEL, dataclasses.replace(FIT_TRAIN, train_length=20)
    else:
        model, training = ModelConfig(), TrainConfig(steps=500, batch_size=32, train_length=20)
    if args.steps is not None:
        training = dataclasses.replace(training, steps=args.steps)
    base = RunConfig(
        task=tasks.get("count_copy"),
        encoding=encodings.get("t5"),
        model=model,
        train=training,
        eval=EvalConfig(lengths=LENGTHS),
    )
    cfgs = [dataclasses.replace(base, seed=s) for s in args.seeds]
    graphdef, params_S = train.train_group(
        cfgs, [args.out / f"seed{s}" for s in args.seeds], progress=True
    )
    trained = sorted(reached_buckets(base, base.train.train_length))
    untrained = sorted(reached_buckets(base, max(LENGTHS)) - set(trained))
    print(f"buckets training reaches (n <= 20): {trained[0]}-{trained[-1]}; "
          f"evaluation at n = 24-40 adds {untrained}")  # fmt: skip

    variants = {
        "as trained": params_S,
        "zeroed": with_rows(params_S, untrained, None),
        "clamped": with_rows(params_S, untrained, trained[-1]),
    }
    results = {}
    for name, params in variants.items():
        rows_S = evaluate.evaluate_packed(base, graphdef, params)
        results[name] = {
            n: [rows[i]["exact_match"] for rows in rows_S] for i, n in enumerate(LENGTHS)
        }
    print("\nexact match, mean over seeds (min-max):")
    print("variant       " + "".join(f"{n:>14}" for n in LENGTHS))
    for name, by_length in results.items():
        cells = [f"{np.mean(v):.2f} ({min(v):.2f}-{max(v):.2f})" for v in by_length.values()]
        print(f"{name:<14}" + "".join(f"{c:>14}" for c in cells))

    print("\nwhere the trained models stop: answers emitted before END (teacher forced), and the")
    print("bucket of the distance from that answer to SEP (training: distances <= 20, buckets <= "
          f"{_bucket(base, 20)}):")  # fmt: skip
    stops = stop_counts(base, graphdef, params_S)
    for n, counts in stops.items():
        shown = sorted(set(counts))
        print(f"  n = {n}: stops after {shown} answers, SEP distance buckets "
              f"{sorted({_bucket(base, c) for c in shown})}")  # fmt: skip
    print("\nmean |bias| of the trained rows vs the untrained rows, per layer (over heads, seeds):")
    sizes = []
    for path, x in jax.tree_util.tree_flatten_with_path(params_S)[0]:
        if "table_NH" in jax.tree_util.keystr(path):
            x = np.asarray(x)  # [S, buckets, heads]
            t, u = np.abs(x[:, trained]).mean(), np.abs(x[:, untrained]).mean()
            sizes.append({"table": jax.tree_util.keystr(path), "trained": float(t),
                          "untrained": float(u)})  # fmt: skip
            print(f"  {jax.tree_util.keystr(path)}: trained {t:.3f}, untrained {u:.3f}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "t5_count_copy.json").write_text(
        json.dumps(
            {
                "trained_buckets": trained,
                "untrained_buckets": untrained,
                "exact_match": results,
                "bias_sizes": sizes,
                "seeds": args.seeds,
                "stops": stops,
            },
            indent=1,
        )
        + "\n"  # fmt: skip
    )


if __name__ == "__main__":
    main()
