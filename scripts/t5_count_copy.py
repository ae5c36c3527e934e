"""Why does T5's relative bias fail count_copy beyond the training length here?

    python scripts/t5_count_copy.py --from-sweep runs/mcgill [--out runs/t5_count_copy]
    python scripts/t5_count_copy.py [--out runs/t5_count_copy] [--seeds 0 1 2] [--preset fit]

Kazemnejad et al. (2023) report T5 at .77 exact match on count_copy at lengths 21-40 after
training on <= 20, where `pe-research sweep mcgill` fits the training lengths and scores far
lower beyond them. This script tests one explanation: T5 buckets relative distances (32
buckets, unidirectional: 16 exact, then log-spaced up to 128), a count_copy sequence of n
symbols spans distances up to 2n, so training on n <= 20 only ever reads buckets 0-23, and
evaluation at n = 24-40 reads buckets 24-28 too, whose rows hold their random initialisation
(std d_model**-0.5) because no gradient ever reached them.

With --from-sweep it reads the finished count_copy T5 runs of a mcgill sweep folder (both forms,
ours and the paper's shared unscaled table, every seed, from their final checkpoints: nothing is
trained); without it, it trains the CPU T5 run on count_copy here (the seeds packed, until fit).
It then evaluates the trained parameters three ways at every evaluated length:

  as trained    the untrained rows keep their random initialisation
  zeroed        the untrained rows set to 0 (no bias for distances training never saw)
  clamped       the untrained rows set to the row of the longest trained distance, as if the
                bucket scheme ended at the training range

If the zeroed or clamped parameters generalize where the trained ones do not, the untrained rows
are the cause, not model size or training length. It also prints how many answers the models
emit before END, and per table the size of the trained rows next to the untrained ones. Rows go
to OUT/t5_count_copy.json (OUT/<encoding folder>/ with --from-sweep).
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

from pe_research import encodings, runs, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.encodings.bias import t5_relative_bucket
from pe_research.essay import analysis
from pe_research.sweeps.experiments import FIT_MODEL, FIT_TRAIN
from pe_research.tasks import bucket
from pe_research.training import checkpoints, evaluate, selection

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


def stop_counts(cfg: RunConfig, graphdef, params_S, lengths) -> dict[int, list[int]]:
    """Per evaluation length n, for every seed and evaluated sequence, how many answer symbols
    the model emits (argmax under teacher forcing) before its first END (n is right)."""

    @jax.jit
    def predict_SBL(params_S, tokens_BL, pos_BL, valid_BL):
        logits_S = jax.vmap(lambda p: nnx.merge(graphdef, p)(tokens_BL, pos_BL, valid_BL))
        return jnp.argmax(logits_S(params_S), -1)

    out = {}
    root = jax.random.key(cfg.eval.seed)
    for n in lengths:
        width = bucket(cfg.task.seq_len(n, cfg.model.causal))
        batch, pos_BL = evaluate.eval_inputs(cfg, root, jnp.int32(n), width)
        pred_SBL = np.asarray(predict_SBL(params_S, batch.inputs, pos_BL, batch.valid))
        mask_BL = np.asarray(batch.loss_mask)
        answer_BL = np.cumsum(mask_BL, axis=-1) - 1  # index of each scored position in the answer
        end_SBL = (pred_SBL == cfg.task.end) & mask_BL
        first_SB = np.argmax(end_SBL, axis=-1)
        count_SB = np.where(
            end_SBL.any(-1),
            np.take_along_axis(answer_BL[None], first_SB[..., None], -1)[..., 0],
            n + 1,
        )
        out[n] = [int(c) for c in count_SB.reshape(-1)]
    return out


def prompt_spread(cfg: RunConfig, graphdef, params_S, lengths) -> dict[int, float]:
    """Per evaluation length n, how much the model's outputs differ over the n prompt positions:
    max |logits at a prompt position - logits at the first| / max |logits| over the prompt, the
    mean over seeds and sequences. A prompt of one repeated symbol without an instruction gives 0
    under a relative bias or none (every prompt position sees identical values)."""

    @jax.jit
    def logits_SBLV(params_S, tokens_BL, pos_BL, valid_BL):
        return jax.vmap(lambda p: nnx.merge(graphdef, p)(tokens_BL, pos_BL, valid_BL))(params_S)

    out = {}
    root = jax.random.key(cfg.eval.seed)
    first = cfg.task.prefix  # the prompt's first token
    for n in lengths:
        width = bucket(cfg.task.seq_len(n, cfg.model.causal))
        batch, pos_BL = evaluate.eval_inputs(cfg, root, jnp.int32(n), width)
        logits = logits_SBLV(params_S, batch.inputs, pos_BL, batch.valid)
        prompt_SBNV = np.asarray(logits[:, :, first : first + n], np.float64)
        gap_SB = np.abs(prompt_SBNV - prompt_SBNV[:, :, :1]).max(axis=(2, 3))
        out[n] = float(np.mean(gap_SB / np.abs(prompt_SBNV).max(axis=(2, 3))))
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


def sweep_runs(sweep: Path, kinds=("t5",)) -> dict[str, list[Path]]:
    """The finished count_copy runs of a mcgill sweep folder with a T5 bias (or any encoding
    named in kinds), grouped by their config less the seed (ours and the paper's form, one table
    for all layers), each group named by its encoding folder (by its first run's folder where
    several groups share one)."""
    try:
        found = runs.find_runs([sweep])
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"{e} Run `pe-research sweep mcgill --tasks count_copy` first.") from None
    groups: dict[RunConfig, list[Path]] = {}
    for run_dir in found:
        cfg = runs.load_config(run_dir)
        if cfg.task.name == "count_copy" and cfg.encoding.name in kinds:
            groups.setdefault(dataclasses.replace(cfg, seed=0), []).append(run_dir)
    if not groups:
        raise SystemExit(
            f"{sweep} holds no finished count_copy run with a T5 bias: run `pe-research sweep "
            "mcgill --tasks count_copy` first (it writes runs/mcgill), or leave out --from-sweep "
            "to train here."
        )
    names = [dirs[0].parent.name for dirs in groups.values()]
    if len(set(names)) < len(names):  # several configs in one encoding folder (an ablation)
        names = [str(dirs[0].relative_to(sweep)) for dirs in groups.values()]
    return dict(zip(names, groups.values(), strict=True))


def last_trained(run_dir: Path, cfg: RunConfig) -> tuple[nnx.GraphDef, object, str]:
    """(graphdef, params, source) of a train.select_best run's last checkpoint: the parameters
    training ended with, not the best check it was evaluated with (other runs: as evaluated)."""
    if not cfg.train.select_best:
        return analysis.trained_model(run_dir, cfg)
    keys = train.keys_from_seed(cfg.seed)
    graphdef, state = train.init_state(cfg, keys)
    found = checkpoints.restore_latest(
        [run_dir],
        [(state, selection.initial_one(state.params))],
        [{"data": keys.data, "positions": keys.positions}],
    )
    if found is None:
        raise SystemExit(f"{run_dir} has no readable checkpoint.")
    step, ((last, _),) = found
    return graphdef, last.params, f"the run's last parameters (step {step}), not its best check"


def load_group(
    run_dirs: list[Path], last: bool = False
) -> tuple[RunConfig, nnx.GraphDef, object, list[int]]:
    """The first run's config, and the runs' parameters as evaluated (or with `last`, those
    training ended with) stacked on a leading seed axis (the runs must differ in their seed
    only, as `sweep_runs` groups them)."""
    cfgs = [runs.load_config(d) for d in run_dirs]
    load = last_trained if last else analysis.trained_model
    loaded = [load(d, c) for d, c in zip(run_dirs, cfgs, strict=True)]
    for d, (_, _, source) in zip(run_dirs, loaded, strict=True):
        print(f"{d}: {source}")
    params_S = jax.tree.map(lambda *xs: jnp.stack(xs), *[p for _, p, _ in loaded])
    return cfgs[0], loaded[0][0], params_S, [c.seed for c in cfgs]


def dissect(base: RunConfig, graphdef, params_S, seeds: list[int], out: Path) -> None:
    """Evaluate the trained models as trained, with the untrained rows zeroed and clamped; where
    they stop; the size of the rows. Prints tables and writes OUT/t5_count_copy.json."""
    longest = max(base.eval.lengths)
    trained = sorted(reached_buckets(base, base.train.train_length))
    untrained = sorted(reached_buckets(base, longest) - set(trained))
    print(f"\n{base.encoding}: buckets training reaches (n <= {base.train.train_length}): "
          f"{trained[0]}-{trained[-1]}; evaluation to n = {longest} adds {untrained}")  # fmt: skip

    variants = {
        "as trained": params_S,
        "zeroed": with_rows(params_S, untrained, None),
        "clamped": with_rows(params_S, untrained, trained[-1]),
    }
    beyond = [n for n in base.eval.lengths if n > base.train.train_length]
    shown = [n for n in LENGTHS if n in base.eval.lengths] or list(base.eval.lengths)
    results = {}
    for name, params in variants.items():
        rows_S = evaluate.evaluate_packed(base, graphdef, params)
        results[name] = {
            row["length"]: [rows[i]["exact_match"] for rows in rows_S]
            for i, row in enumerate(rows_S[0])
        }
    head = f"{beyond[0]}-{beyond[-1]} mean" if beyond else ""
    print("\nexact match, mean over seeds (min-max):")
    print("variant       " + "".join(f"{n:>18}" for n in shown) + f"{head:>14}")
    for name, by_length in results.items():
        cells = [f"{np.mean(v):.2f} ({min(v):.2f}-{max(v):.2f})" for n, v in by_length.items()
                 if n in shown]  # fmt: skip
        overall = np.mean([by_length[n] for n in beyond]) if beyond else float("nan")
        print(f"{name:<14}" + "".join(f"{c:>18}" for c in cells) + f"{overall:>14.3f}")

    sep_bucket = _bucket(base, base.train.train_length)
    print("\nwhere the trained models stop: answers emitted before END (teacher forced), and the")
    print(f"bucket of the distance from that answer to SEP (training: distances <= "
          f"{base.train.train_length}, buckets <= {sep_bucket}):")  # fmt: skip
    stops = stop_counts(base, graphdef, params_S, shown)
    for n, counts in stops.items():
        ends = sorted(set(counts))
        print(f"  n = {n}: stops after {ends} answers, SEP distance buckets "
              f"{sorted({_bucket(base, c) for c in ends})}")  # fmt: skip
    print("\nmean |bias| of the trained rows vs the untrained rows, per table (over heads, seeds):")
    sizes = []
    for path, x in jax.tree_util.tree_flatten_with_path(params_S)[0]:
        if "table_NH" in jax.tree_util.keystr(path):
            x = np.asarray(x)  # [S, buckets, heads]
            t, u = np.abs(x[:, trained]).mean(), np.abs(x[:, untrained]).mean()
            sizes.append({"table": jax.tree_util.keystr(path), "trained": float(t),
                          "untrained": float(u)})  # fmt: skip
            print(f"  {jax.tree_util.keystr(path)}: trained {t:.3f}, untrained {u:.3f}")
    out.mkdir(parents=True, exist_ok=True)
    runs.write_atomic(
        out / "t5_count_copy.json",
        json.dumps({
            "encoding": str(base.encoding),
            "trained_buckets": trained,
            "untrained_buckets": untrained,
            "exact_match": results,
            "bias_sizes": sizes,
            "seeds": seeds,
            "stops": stops,
        }, indent=1) + "\n",
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("runs/t5_count_copy"))
    parser.add_argument(
        "--from-sweep", type=Path, default=None, metavar="DIR",
        help="dissect the finished count_copy T5 runs of a mcgill sweep (e.g. runs/mcgill: "
        "both T5 forms, every seed, from their final checkpoints) instead of training here",
    )  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--steps", type=int, default=None, help="step cap (default: the preset's, 500 or 2,000)"
    )
    parser.add_argument(
        "--preset", choices=["earlier", "fit"], default="earlier",
        help="earlier: a small preset (2 layers, 500 steps, batch 32); "
        "fit: 4 layers, FIT_TRAIN until fit, at training length 20, in our block (mcgill's own "
        "runs, in T5's block: --from-sweep runs/mcgill)",
    )  # fmt: skip
    parser.add_argument(
        "--prompt-only", action="store_true",
        help="with --from-sweep: only print how much the outputs differ over the prompt "
        "positions (prompt_spread), for every count_copy T5 and NoPE run group",
    )  # fmt: skip
    parser.add_argument(
        "--last", action="store_true",
        help="with --from-sweep: dissect the parameters the runs ended with, not the best "
        "checks they were evaluated with (train.select_best runs)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.from_sweep is not None:
        kinds = ("t5", "nope") if args.prompt_only else ("t5",)
        for name, run_dirs in sweep_runs(args.from_sweep, kinds).items():
            base, graphdef, params_S, seeds = load_group(run_dirs, args.last)
            if args.prompt_only:
                spread = prompt_spread(base, graphdef, params_S, (10, 20, 30))
                print(f"{name} and its other seeds (prefix {base.task.prefix}, select_best "
                      f"{base.train.select_best}): relative spread of the outputs over the prompt: "
                      + ", ".join(f"n = {n}: {v:.2g}" for n, v in spread.items()))  # fmt: skip
            else:
                dissect(base, graphdef, params_S, seeds, args.out / name)
        return
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
    dissect(base, graphdef, params_S, args.seeds, args.out)


if __name__ == "__main__":
    main()
