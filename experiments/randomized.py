"""Do randomized positions raise every encoding's accuracy beyond the training length?

Reproduces Ruoss et al. 2023, "Randomized Positional Encodings Boost Length Generalization of
Transformers" (https://arxiv.org/abs/2305.16843) in encoder mode: reverse and duplicate over a
binary alphabet; sinusoidal, learned, RoPE, ALiBi and Transformer-XL's relative encoding, each
trained with contiguous and with randomized positions, every randomized run scored with
randomized positions (the paper's way) and, apart, with contiguous ones; token accuracy, 3 seeds.
The page names each average by what it averages (`aggregates`). The paper's protocol beside ours
is PROTOCOL below; the generated page shows it.

    pe-research sweep randomized --workers 2    # cpu: 90 runs in 30 trainings, 1-16 symbols
    pe-research sweep randomized --scale gpu    # 1-40 symbols, evaluated to 500
    pe-research sweep randomized --scale paper  # 2,000,000 steps a training; prints its cost

Cost: cpu, about 4 h on 2 CPU cores; paper, bound by the time per step, at least 10 h on one H200.
Results: docs/results/randomized/summary.md and docs/reproductions.md.
What the averages measure, and why learned positions do not train randomized:
docs/notes/randomized.md.
"""

import dataclasses
import statistics
from collections import defaultdict

from pe_research import bench, encodings, positions, tasks
from pe_research.config import EvalConfig, RunConfig, TrainConfig
from pe_research.sweeps import describe, summary
from pe_research.sweeps.experiments import FIT_TRAIN
from pe_research.sweeps.protocol import SAME, Protocol, row

ENCODINGS = ["sinusoidal", "learned", "rope", "alibi", "transformer_xl"]
TASKS = {name: tasks.get(name, alphabet=2) for name in ("reverse", "duplicate")}
SEEDS = (0, 1, 2)
# Ruoss et al.'s encoder (experiments/example.py and models/transformer.py of their code).
ENCODER = bench.PEER_MODEL  # the model the speed bench times against the peer, too
"""Ruoss et al.'s encoder block (models/transformer.py): post-LayerNorm, ReLU MLP, dropout 0.1
on the input and each sublayer's output, and token embeddings of std 0.02 scaled by sqrt(d_model
64): 0.16."""
LEARNED_INIT_STD = 1.0
"""Ruoss et al.'s learned table starts at hk.Embed's default (truncated normal, std 1), 6.25x the
tokens' 0.16. The encoding's default (0.02) would start it 50x weaker than theirs."""
SCALES = {
    # The paper's model; lengths, batch and steps scaled down; trained until fit.
    "cpu": dict(train_length=16, lengths=(16, *range(17, 65)), max_pos=256, model=ENCODER,
                train=dataclasses.replace(FIT_TRAIN, steps=4000), eval_batch=128),
    "gpu": dict(train_length=40, lengths=(40, 60, 80, 120, 160, 250, 500), max_pos=2048,
                model=ENCODER, train=TrainConfig(steps=10000, batch_size=32, train_length=40),
                eval_batch=128),
    "paper": dict(train_length=40, lengths=(40, *range(41, 501)), max_pos=2048, model=ENCODER,
                  train=TrainConfig(steps=2_000_000, batch_size=128, train_length=40,
                                    learning_rate=1e-4, warmup_steps=0, lr_schedule="constant",
                                    weight_decay=0.0, grad_clip=1.0, length_buckets=4,
                                    log_every=1000),
                  eval_batch=512),
}  # fmt: skip


def runs(scale: str = "cpu") -> list[RunConfig]:
    """Contiguous positions, and randomized positions evaluated both ways: randomized too (the
    paper's code) and contiguous. With train.stop_when_fit the fit check reads the evaluation's
    positions, so each way trains on its own."""
    s = SCALES[scale]
    randomized = positions.get("randomized", max_pos=s["max_pos"])
    ways = [(positions.get("contiguous"), "contiguous"), (randomized, "train"),
            (randomized, "contiguous")]  # fmt: skip
    return [
        RunConfig(
            task=task,
            encoding=encodings.get(
                name,
                **(
                    {"max_positions": s["max_pos"], "init_std": LEARNED_INIT_STD}
                    if name == "learned"
                    else {}
                ),
            ),
            model=s["model"],
            train=dataclasses.replace(s["train"], train_length=s["train_length"]),
            eval=EvalConfig(
                lengths=s["lengths"], positions=eval_positions, batch_size=s["eval_batch"]
            ),
            positions=sampler,
            seed=seed,
        )
        for task in TASKS.values()
        for name in ENCODINGS
        for sampler, eval_positions in ways
        for seed in SEEDS
    ]


# -- the protocol --------------------------------------------------------------------------------

REPO = "google-deepmind/randomized_positional_encodings"
PAPER = "arXiv 2305.16843"


def _scaled(f) -> dict[str, str]:
    return {name: f(s) for name, s in SCALES.items() if name != "paper"}


PROTOCOL = Protocol(
    paper=f"Ruoss et al. 2023, Randomized Positional Encodings Boost Length Generalization of "
    f"Transformers ({PAPER})",
    scales=tuple(SCALES),
    rows=(
        row("model", "sizes", "encoder: 5 layers, d_model 64, 8 heads of 8, MLP 256",
            f"{REPO} experiments/example.py (num_layers, embedding_dim), models/transformer.py "
            "(num_heads 8, widening_factor 4)",
            **{s: SAME for s in SCALES}),
        row("model", "block",
            "post-LayerNorm, ReLU MLP, dropout 0.1 (on at evaluation too: the model has no "
            "training switch), token embeddings initialised with std 0.02 and scaled by "
            "sqrt(d_model) (std 0.16)",
            f"{REPO} models/transformer.py (TransformerConfig, TransformerEmbedder, layer_norm "
            "after each sublayer), experiments/range_evaluation.py (model.apply with an rng)",
            **{s: describe.block(ENCODER) + f", token embeddings of std {ENCODER.embed_std:.2f} "
               "(ModelConfig embed_std)" for s in SCALES},
            why="dropout is off at evaluation here (a model's function, not one noisy draw of "
            "it), and drops the input stream for every encoding, where their code drops it only "
            "after adding an absolute encoding (sin/cos, learned); the rest as the paper"),
        row("positions", "encodings",
            "sin/cos, learned, RoPE, ALiBi and Transformer-XL's relative encoding, each with "
            "and without randomized positions",
            f"{REPO} models/positional_encodings.py (PositionalEncodings)",
            **{s: SAME for s in SCALES}),
        row("positions", "learned table",
            "hk.Embed's default initialiser (truncated normal, std 1): 6.25x the token "
            "embeddings' std",
            f"{REPO} models/transformer.py (TransformerEmbedder: hk.Embed without w_init); "
            "google-deepmind/dm-haiku haiku/_src/embed.py (TruncatedNormal())",
            **{s: f"normal, std {LEARNED_INIT_STD:g} (learned init_std), beside tokens of std "
               f"{ENCODER.embed_std:.2f}" for s in SCALES},
            why="not truncated: Haiku's truncation at 2 std makes both of its stds 0.88x "
            "nominal, and the ratio is the same"),
        row("positions", "randomized positions",
            "a sorted sample without replacement from [0, 2,048), one sample per batch, at "
            "training and at test; sin/cos and learned sample once, at the embedding; RoPE, "
            "ALiBi and relative draw a fresh sample in every layer, ALiBi and relative as "
            "sorted distances from [1, 2,048) rather than positions",
            f"{REPO} experiments/example.py (noise_max_length 2048), "
            "models/positional_encodings.py (noisy_fixed_positional_encodings; "
            "hk.next_rng_key() in each attention layer); the repository's issue 1 (test time)",
            **{n: f"a sorted sample from [0, {s['max_pos']:,}) per sequence "
               "(positions.Randomized), shared by every layer, evaluated with randomized "
               "positions as the paper and, apart, with contiguous ones"
               for n, s in SCALES.items()},
            why="positions are one explicit input per sequence that every layer reads (our "
            "model's contract), so one sample per sequence, with the paper's distribution of "
            "positions, for every encoding; the range is scaled down with the lengths on cpu"),
        row("optimisation", "optimizer",
            "Adam, a constant learning rate from {1e-4, 3e-4, 5e-4} (the released example "
            "script: 1e-3), no weight decay, gradient clip 1.0",
            f"{REPO} experiments/training.py (optax.adam, max_grad_norm 1.0); "
            f"{PAPER}, Section 4 (learning rates)",
            **_scaled(lambda s: describe.optimiser(s["train"])),
            paper="lr 1e-4 only; " + describe.optimiser(SCALES["paper"]["train"]),
            why="cpu and gpu train until fit in a few thousand steps, which needs a higher, "
            "annealed rate (scripts/search_recipes.py); the paper scale runs one of the three "
            "rates, as a sweep over them triples the cost", verified=False),
        row("optimisation", "batch and steps",
            "batch 128, 2,000,000 steps (the released example script: 10,000), the last "
            "parameters evaluated",
            f"{REPO} experiments/example.py (batch_size 128); {PAPER}, Section 4 (steps)",
            **_scaled(lambda s: describe.schedule(s["train"])), paper=SAME,
            why="scaled down for 2 CPU cores (cpu) and one accelerator (gpu)", verified=False),
        row("data", "alphabet", "binary for reverse and duplicate",
            f"{REPO} experiments/constants.py (reverse_string and duplicate_string: "
            "vocab_size=2)", **{s: SAME for s in SCALES}),
        row("data", "format",
            "the input, then one empty token per output position; loss on the outputs",
            f"{REPO} experiments/utils.py (make_model_with_empty_targets)",
            **{s: "`x_1 .. x_n SEP BLANK ..`: the same with one SEP between" for s in SCALES},
            why="the encoder form of our prompt-answer tasks has a SEP; one constant token"),
        row("data", "training lengths",
            "uniform in 1-40, one length per batch", f"{REPO} experiments/example.py "
            "(UniformCurriculum over 1..sequence_length 40)",
            **{n: f"uniform in 1-{s['train_length']} per sequence, in 4 stratified buckets"
               if s["train"].length_buckets > 1 else f"uniform in 1-{s['train_length']} per "
               "sequence" for n, s in SCALES.items()},
            why="lengths are drawn per sequence here (the same distribution, less variance "
            "per step); cpu scales them down for 2 CPU cores"),
        row("evaluation", "lengths and metric",
            "per-token accuracy on the outputs at every length 41-500, 512 sequences each",
            f"{REPO} experiments/range_evaluation.py, experiments/example.py "
            f"(range_test_total_batch_size 512); {PAPER}, Section 4 (lengths to 500)",
            **{n: f"token accuracy at {describe.lengths(s['lengths'])}, {s['eval_batch']} "
               "sequences each" for n, s in SCALES.items() if n != "paper"}, paper=SAME,
            why="scaled down for 2 CPU cores (cpu: 1x-4x of 16) and for evaluation time (gpu)",
            verified=False),
        row("aggregation", "published number",
            "+12.0 points on average: randomized minus contiguous accuracy over lengths 41-500, "
            "every task and encoding, the best of 10 seeds x 3 learning rates per cell",
            f"{PAPER}, abstract and Table 1",
            **{s: "the paper's aggregate computed on our runs (every pair, unfit included, max "
               "over seeds, all evaluated lengths beyond training), beside ours (pairs where "
               "both fit, mean over fit seeds)" for s in SCALES},
            why="we run 2 of their 15 tasks with 3 seeds and one learning rate, so the +12.0 is "
            "not recomputable; both of our aggregates are named by what they average",
            verified=False),
    ),
)  # fmt: skip

PAPER_GAIN = 12.0
"""Ruoss et al. (2023), abstract: randomized positions raise test accuracy beyond the training
length by 12.0 points on average over their tasks and encodings."""
WAYS = ("contiguous", "randomized, eval randomized", "randomized, eval contiguous")


def _way(label: str) -> tuple[str, str]:
    """(encoding, way) of a series label: "rope", "rope + randomized(...)", "rope +
    randomized(...), eval randomized"."""
    name, _, sampler = label.partition(" + ")
    if not sampler:
        return name, WAYS[0]
    return name, WAYS[1] if sampler.endswith("eval randomized") else WAYS[2]


def pair_scores(rows: list[dict]) -> dict[tuple[str, str], dict[str, list[tuple[float, bool]]]]:
    """(task, encoding) -> way -> per run (token accuracy over the lengths beyond training, fit)."""
    lengths = sorted({r["length"] for r in rows if r["length"] > r["train_length"]})
    out: dict[tuple[str, str], dict[str, list]] = defaultdict(dict)
    for (task, label), values in summary.per_run_means(rows, "token_accuracy", lengths).items():
        name, way = _way(label)
        out[(task, name)][way] = [(m, bool(f)) for m, f in values]
    return out


def aggregates(rows: list[dict]) -> dict[str, tuple[float, int]]:
    """Name -> (mean gain in points, pairs averaged), each name saying what it averages."""
    out = {}
    pairs = pair_scores(rows)
    for select, pick in (("max over seeds", max), ("mean over seeds", statistics.fmean)):
        gains = [
            100 * (pick([m for m, _ in ways[WAYS[1]]]) - pick([m for m, _ in ways[WAYS[0]]]))
            for ways in pairs.values()
            if ways.get(WAYS[0]) and ways.get(WAYS[1])
        ]
        if gains:
            out[f"paper's aggregate: every pair, unfit included, {select}"] = (
                statistics.fmean(gains),
                len(gains),
            )
    fit_gains = []
    for ways in pairs.values():
        fit = {w: [m for m, f in ways.get(w, []) if f] for w in WAYS[:2]}
        if fit[WAYS[0]] and fit[WAYS[1]]:
            fit_gains.append(
                100 * (statistics.fmean(fit[WAYS[1]]) - statistics.fmean(fit[WAYS[0]]))
            )
    if fit_gains:
        out["ours: pairs where both fit, mean over the fit seeds"] = (
            statistics.fmean(fit_gains),
            len(fit_gains),
        )
    return out  # fmt: skip


def paper_vs_here(rows: list[dict]) -> str:
    """Per task and encoding, token accuracy beyond the training length with contiguous and
    randomized training positions (randomized runs scored both ways), then the gain averaged two
    ways: as the paper averages (every pair) and as we do (fit pairs), beside the paper's."""
    lengths = sorted({r["length"] for r in rows if r["length"] > r["train_length"]})
    lines = [
        f"Ruoss et al. 2023: randomized positions raise accuracy beyond the training length by "
        f"+{PAPER_GAIN} points on average over 15 tasks and their encodings (lengths 41-500). "
        f"Here: token accuracy over lengths {describe.lengths(lengths)}, mean ± std over seeds "
        "(fit seeds / seeds).",
        "",
        "| task | encoding | " + " | ".join(WAYS) + " | gain, eval randomized (fit seeds) |",
        "|---" * (len(WAYS) + 3) + "|",
    ]
    for (task, name), ways in sorted(pair_scores(rows).items()):
        cells = []
        for way in WAYS:
            values = ways.get(way, [])
            fit_count = f"({sum(f for _, f in values)}/{len(values)})"
            spread = summary.mean_and_spread([m for m, _ in values]) if values else ""
            cells.append(f"{spread} {fit_count}" if values else "-")
        fit = {w: [m for m, f in ways.get(w, []) if f] for w in WAYS[:2]}
        gain = (f"{100 * (statistics.fmean(fit[WAYS[1]]) - statistics.fmean(fit[WAYS[0]])):+.1f}"
                if fit[WAYS[0]] and fit[WAYS[1]] else "- (not both fit)")  # fmt: skip
        lines.append(f"| {task} | {name} | " + " | ".join(cells) + f" | {gain} |")
    lines += ["", "Gain of randomized positions (evaluated randomized) over contiguous ones, in "
              "points of token accuracy beyond the training length:", ""]  # fmt: skip
    for name, (gain, n) in aggregates(rows).items():
        lines.append(f"- {name}: {gain:+.1f} over {n} (task, encoding) pairs")
    lines.append(f"- published: +{PAPER_GAIN} over every task and encoding of the paper")
    return "\n".join(lines) + "\n"


def headline(rows: list[dict]) -> dict[str, list[tuple[str, list[int], list[float], bool]]]:
    """Token accuracy by length, contiguous vs randomized (evaluated randomized), mean over seeds;
    the paper released no per-length numbers."""
    by: dict[tuple[str, str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get("failed_step") is None:
            name, way = _way(r["encoding"])
            if way != WAYS[2]:
                by[(r["task"], name, way)][r["length"]].append(r["token_accuracy"])
    panels: dict[str, list] = defaultdict(list)
    for (task, name, way), v in sorted(by.items()):
        panels[f"{task}: token accuracy"].append(
            (f"{name}, {way}", sorted(v), [statistics.fmean(v[n]) for n in sorted(v)], False)
        )
    return dict(panels)  # fmt: skip
