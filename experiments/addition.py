"""How far beyond its training length does each encoding add, with and without position coupling?

Reproduces Cho et al. 2024, "Position Coupling: Improving Length Generalization of Arithmetic
Transformers Using Task Structure" (https://arxiv.org/abs/2405.20671): addition in its format
(TASK: `a + b SEP c END`, the sum reversed) and its block (CHO_BLOCK); NoPE, RoPE, ALiBi and FIRE
with contiguous positions, and RoPE, ALiBi, FIRE and its headline learned table (HEADLINE) with
coupled ones (`variants`: a random start in training reaches every evaluated position); 3 seeds.
The paper's protocol beside ours is PROTOCOL below; the generated page shows it.

    pe-research sweep addition --workers 2   # cpu: 24 runs in 8 trainings, 1-8 digits
    pe-research sweep addition --scale gpu   # 1-30 digits, evaluated to 200
    pe-research sweep addition --scale paper # their 1-layer model and training; prints its cost

Cost: cpu, about 70 min on 2 CPU cores; paper, 4.4e18 FLOPs, at least 7.5 h on one H200.
Results: docs/results/addition/summary.md and docs/reproductions.md.
The recipe probes, and what the runs show about coupling: docs/notes/addition.md.
"""

import dataclasses
import statistics
from collections import defaultdict

from pe_research import encodings, positions, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.sweeps import describe
from pe_research.sweeps.experiments import FIT_TRAIN, GPU_MODEL, gpu_train
from pe_research.sweeps.protocol import SAME, Protocol, row

TASK = tasks.get("addition", reversed_operands=False, end_token=True)
"""Cho et al.'s format: operands most significant digit first, the sum reversed, then END."""
SEEDS = (0, 1, 2)
CHO_BLOCK = dict(
    norm="rmsnorm", norm_position="pre_post", mlp="geglu", mlp_bias=False, qk_scale="init"
)
"""The paper's block (its code's CustomT5DecoderOnly, norm_pos=pre_post, act=gated-gelu):
RMSNorm before each sublayer and after each residual add, a gated-GELU MLP without biases, T5's
attention (q.k unscaled, W_q drawn 1/sqrt(head dim) smaller). Every scale runs it."""
CPU_RECIPE = dict(learning_rate=1e-3, adam_b2=0.95, weight_decay=0.0)
"""What the cpu scale changes in the fit recipe's optimiser."""
CPU_TRAIN = dataclasses.replace(FIT_TRAIN, train_length=8, steps=4000, **CPU_RECIPE)
"""The fit recipe with the paper's optimizer (AdamW betas (0.9, 0.95), no weight decay) at lr
1e-3, 10x the paper's, and a 4,000-step cap: the recipe that trains the headline model in this
block (docs/notes/addition.md)."""
SCALES = {
    # One layer, as the paper's headline model, at a width 2 cores train in minutes.
    "cpu": dict(
        model=ModelConfig(num_layers=1, d_model=256, num_heads=4, mlp_dim=512, **CHO_BLOCK),
        train=CPU_TRAIN,
        lengths=(8, 12, 16, 20, 24, 28, 32), eval_batch=128,
    ),
    "gpu": dict(
        model=dataclasses.replace(GPU_MODEL, **CHO_BLOCK),
        train=gpu_train(train_length=30, steps=20000, length_buckets=2, stop_when_fit=True,
                        fit_check_every=500, log_every=500, adam_b2=0.95, weight_decay=0.0),
        lengths=(30, 50, 100, 150, 200), eval_batch=128,
    ),
    # scripts/addition/run_coupling.sh and configs/training/default.yaml of Cho et al.'s code.
    "paper": dict(
        model=ModelConfig(num_layers=1, d_model=1024, num_heads=4, mlp_dim=2048, **CHO_BLOCK),
        train=TrainConfig(
            steps=50_000, batch_size=1000, train_length=30, learning_rate=1e-4,
            warmup_steps=500, lr_schedule="cosine", weight_decay=0.0, adam_b2=0.95,
            grad_clip=1.0, length_buckets=5, log_every=500,
        ),
        lengths=(30, *range(5, 201, 5)), eval_batch=1000,
    ),
}  # fmt: skip


HEADLINE = encodings.get("learned", init_std=1.0)
"""The paper's learned position table starts N(0, 1), the scale of the token embeddings
(HanseulJo/position-coupling src/model/modeling/custom_t5_decoder_only.py: CustomT5Stack,
`wpe.weight.data.normal_(std=initializer_factor * 1.0)`); the encoding's default, 0.02, starts it
50x below our unit-variance tokens, and the 1-layer model then does not learn addition."""


def variants(longest: int) -> list[tuple[encodings.Encoding, positions.Sampler]]:
    """(encoding, position sampler) pairs. Every coupled variant draws a random start in
    training that keeps the row's positions at most longest + 1, the largest coupled position of
    a `longest`-digit sum, so training reaches every position evaluation uses."""
    coupled = positions.Coupled(position_limit=longest + 1)
    contiguous = positions.Contiguous()
    return [
        *((encodings.get(name), contiguous) for name in ("nope", "rope", "alibi", "fire")),
        *((encodings.get(name), coupled) for name in ("rope", "alibi", "fire")),
        (HEADLINE, coupled),  # the paper's headline model
    ]


def runs(scale: str = "cpu") -> list[RunConfig]:
    s = SCALES[scale]
    longest = max(s["lengths"])
    return [
        RunConfig(
            task=TASK,
            encoding=encoding,
            positions=sampler,
            model=s["model"],
            train=s["train"],
            eval=EvalConfig(lengths=tuple(sorted(set(s["lengths"]))), batch_size=s["eval_batch"]),
            seed=seed,
        )
        for encoding, sampler in variants(longest)
        for seed in SEEDS
    ]


# -- the protocol --------------------------------------------------------------------------------

REPO = "HanseulJo/position-coupling"
RUN = f"{REPO} scripts/addition/run_coupling.sh"


def _per_scale(f) -> dict[str, str]:
    return {name: f(s) for name, s in SCALES.items() if name != "paper"}


PROTOCOL = Protocol(
    paper="Cho et al. 2024, Position Coupling: Improving Length Generalization of Arithmetic "
    "Transformers Using Task Structure (arXiv 2405.20671)",
    scales=tuple(SCALES),
    rows=(
        row("model", "sizes",
            "1 layer, d_model 1024, 4 heads of 256, MLP 2048 (the headline model)",
            f"{RUN} (n_layers=1, n_heads=4, d_model, d_ff, d_kv)",
            **_per_scale(lambda s: describe.sizes(s["model"])), paper=SAME,
            why="scaled down for 2 CPU cores (cpu); the gpu preset predates this protocol and "
            "keeps its 4-layer d_model 256 model"),
        row("model", "block",
            "RMSNorm before and after each sublayer, gated-GELU MLP, no dropout; T5-style "
            "attention without 1/sqrt(d) (built on Kazemnejad et al.'s decoder)",
            f"{RUN} (norm_pos=pre_post, act=gated-gelu); {REPO} "
            "configs/model/CustomT5DecoderOnly.yaml, README (Remarks)",
            **{s: SAME for s in SCALES}),
        row("positions", "encodings",
            "learned absolute positions with coupling (headline); NoPE and other encodings as "
            "baselines", f"{RUN} (position_encoding_type=abs_learned); arXiv 2405.20671",
            **{s: SAME for s in SCALES}),
        row("positions", "learned table",
            "initialised N(0, 1), the token embeddings' scale (the headline model)",
            f"{REPO} src/model/modeling/custom_t5_decoder_only.py (CustomT5Stack: wpe normal_, "
            "std=initializer_factor * 1.0)",
            **{s: SAME for s in SCALES}),
        row("positions", "coupling and random start",
            "digits of one significance share a position, PLUS and '=' at the start; in "
            "training the start is uniform over those keeping every position <= max_position "
            "(202 for 200 digits), at evaluation 1",
            f"{REPO} src/data/addition.py (AdditionDatasetWithCoupledPositions), "
            "scripts/addition/eval_coupling.sh (maxpos=202)",
            **{n: f"the same rule (positions.Coupled position_limit={max(s['lengths']) + 1}; "
               "PLUS and SEP at the start, digit k at start + k + 1)" for n, s in SCALES.items()
               if n != "paper"}, paper=SAME,
            why="the limit follows the longest evaluated sum, scaled down with the lengths"),
        row("optimisation", "optimizer",
            "AdamW, lr 1e-4, betas (0.9, 0.95), weight decay 0, 1% warm-up then cosine to 10%, "
            "gradient clip 1.0", f"{REPO} configs/training/default.yaml; {RUN} (lr, wd)",
            **_per_scale(lambda s: describe.optimiser(s["train"])), paper=SAME,
            why="training until fit within a few thousand steps of a small batch needs a "
            "higher rate (cpu 1e-3, gpu 5e-4), kept with the paper's betas and no weight "
            "decay (the cpu recipe)"),
        row("optimisation", "batch and steps", "batch 1,000, 50,000 steps",
            f"{RUN} (bs=1000, training.n_steps=50000)",
            **_per_scale(lambda s: describe.schedule(s["train"])), paper=SAME,
            why="scaled down for 2 CPU cores (cpu) and one accelerator (gpu)"),
        row("optimisation", "checkpoint",
            "the best-validation and the last checkpoint, both evaluated",
            f"{REPO} scripts/addition/eval_coupling.sh (best=True, False)",
            **{s: "the last step (stopped early once fit where train.stop_when_fit is on)"
               for s in SCALES},
            why="the runs stop at their first fit, as every fit experiment here; "
            "train.select_best would keep the best validation check instead (unused here)"),
        row("data", "format",
            "`[BOS] a + b = c [EOS]`: operands most significant digit first and zero-padded to "
            "one length, the sum reversed and padded to n + 1 digits; loss on the sum and EOS",
            f"{REPO} configs/task/addition_coupled.yaml, src/data/addition.py, "
            "src/tokenization/tokenization.py",
            **{s: "`a + b SEP c END` in the same order and padding (tasks.Addition "
               "reversed_operands=False, end_token=True); loss on the sum and END; no BOS"
               for s in SCALES},
            why="BOS is one constant token at the start of every sequence"),
        row("data", "operands",
            "each operand's digit count uniform in 1..30 independently, the leading digit "
            "non-zero, the shorter zero-padded", f"{REPO} src/data/addition.py (AdditionDataset)",
            **{s: "both operands exactly n digits, n uniform in 1..train length, every digit "
               "uniform (a leading 0 plays the padding)" for s in SCALES},
            why="a task draws one length per sequence (the length buckets and evaluation "
            "lengths rest on it); zero-padded shorter operands occur, not in their proportion"),
        row("data", "training lengths", "1-30 digits", f"{RUN} (n_train=30)",
            **_per_scale(lambda s: f"1-{s['train'].train_length} digits"), paper=SAME,
            why="scaled down for 2 CPU cores (cpu)"),
        row("data", "training set", "100,000 additions (500 epochs)",
            f"{RUN} (task.train.n_data=100000)",
            **{s: "fresh additions at every step" for s in SCALES},
            why="tasks sample on device at every step, the codebase's only mode"),
        row("evaluation", "lengths", "5, 10, ..., 200 digits",
            f"{REPO} scripts/addition/eval_coupling.sh (--min_n_digits 5 --max_n_digits 200 "
            "--step 5)",
            **_per_scale(lambda s: describe.lengths(s["lengths"]) + " digits"), paper=SAME,
            why="scaled down with the training lengths (cpu: 1x-4x of 8 digits; gpu: a subset)"),
        row("evaluation", "metric",
            "exact match of the sum and EOS, teacher forced (instance-wise accuracy)",
            f"{REPO} evaluate_model.py (get_instancewise_accuracy)",
            **{s: SAME for s in SCALES}),
        row("evaluation", "test set", "100,000 additions per length, operands of exactly n "
            "digits", f"{REPO} scripts/addition/eval_coupling.sh (task.val_long.n_data=100000)",
            **{n: f"{s['eval_batch']:,} additions per length" for n, s in SCALES.items()},
            why="evaluation scores one batch per length, and 100,000 sums of 200 digits do not "
            "fit in one accelerator's memory"),
        row("aggregation", "seeds",
            "8 runs per setting, 4 model seeds x 2 data seeds (the released training script "
            "runs 3 x 2); the figures show the median over them, with a 95% confidence interval",
            "arXiv 2405.20671 (experimental setup; Figure 1 caption: medians over experiments); "
            f"{REPO} scripts/addition/eval_coupling.sh (seed 0-3, seed_data 0-1); "
            f"{RUN} (--seeds 0 1 2 --seeds_data 0 1)",
            **{s: "3 seeds (each sets model and data); the median over every seed (the paper's "
               "statistic) beside the mean ± std over the fit seeds, and fit counts"
               for s in SCALES},
            why="a run's seed sets both streams here; 3 seeds, not 8, to keep every scale's "
            "cost down (the paper scale's 3 seeds are already at least 7.5 h on one H200)",
            verified=False),
    ),
)  # fmt: skip

# -- beside the paper ----------------------------------------------------------------------------

PAPER_CLAIM = (
    "Cho et al. 2024 (abstract): a 1-layer Transformer with coupled positions, trained on "
    "additions of 1-30 digits, adds 200-digit numbers (6.67x the training length); without "
    "coupling the same models fail beyond the trained lengths. Their per-length numbers are not "
    "released (the repository holds code and scripts, no results)."
)


def reach(rows: list[dict], threshold: float = 0.9) -> dict[str, tuple[int, int, int, int]]:
    """Series label -> (largest evaluated length whose exact match, mean over the fit seeds, is
    >= threshold; the same for the median over every seed, fit or not, the paper's statistic
    (0: none); fit seeds; seeds)."""
    fit_by: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    all_by: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    fits: dict[str, dict[str, bool | None]] = defaultdict(dict)
    for r in rows:
        if r.get("failed_step") is not None:
            continue
        fits[r["encoding"]][r["run"]] = r.get("fit")
        all_by[r["encoding"]][r["length"]].append(r["exact_match"])
        if r.get("fit") is not False:
            fit_by[r["encoding"]][r["length"]].append(r["exact_match"])

    def longest(by: dict[int, list[float]], statistic) -> int:
        return max((n for n, v in by.items() if statistic(v) >= threshold), default=0)

    return {
        label: (
            longest(fit_by[label], statistics.fmean),
            longest(all_by[label], statistics.median),
            sum(f is not False for f in runs_.values()),
            len(runs_),
        )
        for label, runs_ in fits.items()
    }


def paper_vs_here(rows: list[dict]) -> str:
    """How far each variant adds (the longest length at >= 90% exact match: mean over its fit
    seeds, and median over every seed as the paper's figures) beside the paper's claim."""
    if not rows:
        return ""
    train_length = rows[0]["train_length"]
    lines = [
        PAPER_CLAIM,
        "",
        f"Here: the longest evaluated length at which exact match is >= 0.9, and its ratio to "
        f"the training length {train_length}: by the mean over the fit seeds (ours) and by the "
        "median over every seed, fit or not (the statistic of the paper's figures).",
        "",
        "| encoding + positions | fit | longest >= .9, mean of fit | x training length "
        "| longest >= .9, median of all | x training length |",
        "|---|---|---|---|---|---|",
    ]

    def cells(longest: int) -> str:
        return f"{longest} | {longest / train_length:.2f}x" if longest else "- | -"

    for label, (by_mean, by_median, fit, total) in sorted(reach(rows).items()):
        lines.append(f"| {label} | {fit}/{total} | {cells(by_mean)} | {cells(by_median)} |")
    return "\n".join(lines) + "\n"


def headline(rows: list[dict]) -> dict[str, list[tuple[str, list[int], list[float], bool]]]:
    """Exact match by length of each variant, the median over every seed as the paper's figures
    draw it (the paper released no per-length numbers to set beside them)."""
    by: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get("failed_step") is None:
            by[r["encoding"]][r["length"]].append(r["exact_match"])
    series = [
        (label, sorted(v), [statistics.median(v[n]) for n in sorted(v)], False)
        for label, v in sorted(by.items())
    ]
    return {"addition: exact match, median over seeds": series}
