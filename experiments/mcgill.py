"""Does the order of encodings on copy, count_copy and reverse hold when the experiment is rerun?

Reproduces Kazemnejad et al. 2023, "The Impact of Positional Encoding on Length Generalization
in Transformers" (https://arxiv.org/abs/2305.19466): a decoder in T5's block (T5_BLOCK) trained
on 1-20 symbols of 100, every answer ending with END, exact match at each length 21-40, 3 seeds;
the paper's five encodings as it trained them (PAPER_ENCODINGS) beside ours (EXTRA_ENCODINGS).
The paper's protocol beside ours is PROTOCOL below; the generated page shows it, with the paper's
numbers recomputed from its released runs (PAPER_EXACT_MATCH) and the mean reciprocal rank.

    pe-research sweep mcgill --workers 2     # cpu: 63 runs in 21 trainings
    pe-research sweep mcgill --scale gpu     # 6 layers, d_model 256, T5's dropout
    pe-research sweep mcgill --scale paper   # T5-base and their trainer; prints its cost

Cost: cpu, about 3 h on 2 CPU cores, every run to its budget (2,000 steps; reverse 8,000, the
most), estimated from the rate of mcgill_ablations' best-of-budget groups with a core each
(about 9 min per 3 seeds); gpu, count_copy's 21 runs about 7 min on one H200 to their first
fit (more to the budget); paper, 2.2e18 FLOPs, at least 3.7 h on one H200.
Results: docs/results/mcgill/summary.md (gpu: docs/results/mcgill-gpu/summary.md) and
docs/reproductions.md. Why the cpu scale ties T5's head but runs no dropout, and reverse's cap:
docs/notes/mcgill-cpu-scale.md; why T5 fails count_copy here: docs/notes/t5-count-copy.md.
"""

import dataclasses
import statistics
from collections import defaultdict

from pe_research import encodings, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig, task_label
from pe_research.sweeps import describe, summary
from pe_research.sweeps.experiments import FIT_MODEL, FIT_TRAIN, GPU_MODEL, gpu_train
from pe_research.sweeps.protocol import SAME, Protocol, row

INSTANCE = dict(prefix=2, separator=4)
"""Their instance format, `Copy: x_1 .. x_n [SEP] y_1 .. y_n </s>`: "Copy:" ("Reverse:") is 2
pieces of T5's SentencePiece vocabulary and "[SEP]" 4 (▁[, S, EP, ]) as we count them (T5's
tokenizer is not available here to check): 2 instruction tokens and a separator of 4."""
TASKS = {
    "copy": tasks.get("copy", alphabet=100, end_token=True, **INSTANCE),
    "count_copy": tasks.get("count_copy", alphabet=100, **INSTANCE),
    "reverse": tasks.get("reverse", alphabet=100, end_token=True, **INSTANCE),
}
T5_BLOCK = dict(norm="rmsnorm", mlp="relu", mlp_bias=False, qk_scale="init")
"""Their decoder's block, T5's (src/models/custom_t5_decoder_only.py): pre-RMSNorm, a ReLU MLP
without biases, q.k unscaled with W_q drawn 1/sqrt(head dim) smaller; every scale runs it."""
T5_REST = dict(dropout=0.1, dropout_sites="t5", tie_embeddings=True)
"""The rest of their decoder: dropout 0.1 at T5's sites and the output head tied to the token
embeddings (t5-base's T5Config). The gpu and paper scales run it. The cpu scale ties its head
but does not drop: dropout at the cpu recipe's lr and step cap leaves runs unfit
(docs/notes/mcgill-cpu-scale.md)."""
PAPER_ENCODINGS = {
    # The names their released results use (experiments/mcgill_paper_numbers.py) -> the encoding
    # they trained, in our terms. Under T5_BLOCK's qk_scale 'init' the model leaves q.k unscaled,
    # so T5's bias adds to unscaled logits with t5's default scaled=True.
    "nope": encodings.get("nope"),
    "t5": encodings.get("t5", shared=True),
    "alibi": encodings.get("alibi"),
    "rope": encodings.get("rope", fraction=0.25, layout="interleaved"),
    "sinusoidal": encodings.get("sinusoidal"),
}
EXTRA_ENCODINGS = (encodings.get("t5"), encodings.get("rope"))
"""Ours beside theirs: T5 with a table per layer, RoPE on every dimension."""
TRAIN_LENGTH = 20
VALID_LENGTHS = tuple(range(2, 21))
"""Their validation lengths, on which the best checkpoint is chosen (train.select_best)."""
TEST_LENGTHS = tuple(range(21, 41))
BEST = dict(stop_when_fit=False, select_best=True, select_lengths=VALID_LENGTHS)
"""Their checkpoint selection: train to the step budget, keep the checkpoint with the best exact
match on the validation lengths (the first of ties)."""
SEEDS = (0, 1, 2)
SCALES = {
    # FIT_TRAIN's optimiser at training length 20, the best validation check within its
    # 2,000-step budget; reverse at 100 symbols gets four times the budget, and T5's head is tied
    # without its dropout (docs/notes/mcgill-cpu-scale.md).
    "cpu": dict(
        model=dataclasses.replace(FIT_MODEL, **T5_BLOCK, tie_embeddings=True),
        train=dataclasses.replace(
            FIT_TRAIN, train_length=TRAIN_LENGTH, **BEST, select_every=100
        ),
        task_steps={"reverse": 8000}, eval_batch=128,
    ),
    "gpu": dict(
        model=dataclasses.replace(GPU_MODEL, num_layers=6, **T5_BLOCK, **T5_REST),
        train=gpu_train(train_length=TRAIN_LENGTH, warmup_steps=500, **BEST, select_every=250),
        eval_batch=128,
    ),
    # Their T5-base decoder and trainer settings (results/sanity_check.jsonl, cfg__*).
    "paper": dict(
        model=ModelConfig(
            num_layers=12, d_model=768, num_heads=12, mlp_dim=3072, **T5_BLOCK, **T5_REST
        ),
        train=TrainConfig(
            steps=40_000, batch_size=64, train_length=TRAIN_LENGTH, learning_rate=3e-5,
            warmup_steps=2_400, lr_schedule="linear", weight_decay=0.05, grad_clip=1.0,
            length_buckets=4, **BEST, select_every=2_000,
            log_every=500,
        ),
        eval_batch=500,
    ),
}  # fmt: skip


def train_config(scale: str, task: str) -> TrainConfig:
    """The scale's training, with the step cap of `task` where the scale sets its own."""
    s = SCALES[scale]
    steps = s.get("task_steps", {}).get(task)
    return s["train"] if steps is None else dataclasses.replace(s["train"], steps=steps)


def runs(scale: str = "cpu") -> list[RunConfig]:
    s = SCALES[scale]
    return [
        RunConfig(
            task=task,
            encoding=encoding,
            model=s["model"],
            train=train_config(scale, name),
            eval=EvalConfig(lengths=(*VALID_LENGTHS, *TEST_LENGTHS), batch_size=s["eval_batch"]),
            seed=seed,
        )
        for name, task in TASKS.items()
        for encoding in (*PAPER_ENCODINGS.values(), *EXTRA_ENCODINGS)
        for seed in SEEDS
    ]


# -- the protocol --------------------------------------------------------------------------------

REPO = "McGill-NLP/length-generalization"
RESULTS = f"{REPO} results/sanity_check.jsonl"
MODEL_FILE = "src/models/custom_t5_decoder_only.py"


def _per_scale(f) -> dict[str, str]:
    return {name: f(s) for name, s in SCALES.items() if name != "paper"}


def _schedule(s) -> str:
    text = describe.schedule(s["train"])
    extra = [f"{task}: {steps:,} steps at most" for task, steps in s.get("task_steps", {}).items()]
    return "; ".join([text, *extra])


PROTOCOL = Protocol(
    paper="Kazemnejad et al. 2023, The Impact of Positional Encoding on Length Generalization "
    "in Transformers (arXiv 2305.19466)",
    scales=tuple(SCALES),
    rows=(
        row("model", "sizes",
            "T5-base decoder: 12 layers, d_model 768, 12 heads of 64, MLP 3072 (109.6M "
            "trainable parameters)",
            f"{RESULTS}: cfg__model.hf_model_name t5-base, sum__num_trainable_params",
            **_per_scale(lambda s: describe.sizes(s["model"])), paper=SAME,
            why="scaled down for 2 CPU cores (cpu) and for an hour or two of one accelerator "
            "(gpu)"),
        row("model", "block",
            "T5's: pre-norm RMSNorm, ReLU MLP without biases, dropout 0.1 (on the embeddings, "
            "the attention weights, each sublayer's output, the MLP's hidden units and the last "
            "norm's output), output tied to the embedding (x d_model^-0.5)",
            f"{REPO} {MODEL_FILE} (CustomT5Stack, CustomT5Attention, CustomDecoderOnlyT5); "
            "t5-base's T5Config",
            **{s: describe.block(v["model"]) + ("" if v["model"].tie_embeddings else
                                                 ", untied output")
               for s, v in SCALES.items()},
            why="cpu: no dropout, as with it at the cpu recipe's lr and step cap NoPE and "
            "ALiBi fit 0 of 6 on count_copy"),
        row("model", "attention logits",
            "q.k unscaled for every encoding, W_q initialised with std (d_model d_kv)^-0.5",
            f"{REPO} {MODEL_FILE}, CustomT5Attention",
            **{s: SAME for s in SCALES}),
        row("positions", "encodings",
            "NoPE; T5 bias, one table (32 buckets, max distance 128) made in layer 1 and added "
            "in every layer; ALiBi; Rotary on 25% of each head (rotary_dim = d_head / 4, "
            "interleaved pairs, base 10,000); absolute sinusoidal",
            f"{REPO} {MODEL_FILE}, CustomT5Stack and CustomT5Attention",
            **{s: SAME for s in SCALES}),
        row("positions", "positions",
            "0, 1, ... from the first token of the prompt prefix",
            f"{REPO} configs/t5_dec_base.jsonnet (decoder_only_include_position_ids false)",
            **{s: SAME for s in SCALES}),
        row("optimisation", "optimizer",
            "AdamW, lr 3e-5, 2,400 warm-up steps (6%) then linear decay to 1e-7, weight decay "
            "0.05, gradient clip 1.0",
            f"{RESULTS}: cfg__trainer.*; {REPO} configs/trainer/base_model.jsonnet",
            **_per_scale(lambda s: describe.optimiser(s["train"])), paper=SAME,
            why="training until fit within a 2,000 (cpu; reverse 8,000) or 5,000 (gpu) step cap "
            "needs a far higher rate (scripts/search_recipes.py; experiments/default.py)"),
        row("optimisation", "batch and steps", "batch 64, 40,000 steps",
            f"{RESULTS}: cfg__trainer.target_batch_size, max_steps",
            **_per_scale(_schedule), paper=SAME,
            why="scaled down for 2 CPU cores (cpu) and one accelerator (gpu); at the cpu scale "
            "reverse gets four times copy's cap: 14 of its 21 runs had not fit by 2,000 steps "
            "with a head of its own, nor 14 by 4,000 with T5's tied head"),
        row("optimisation", "checkpoint",
            "the checkpoint (every 2,000 steps) with the best exact match on validation "
            "lengths 2-20, the first one on ties (2,000-40,000 steps in their runs; T5 on "
            "count_copy 20,000-28,000)",
            f"{RESULTS}: cfg__trainer.metric_for_best_model (seq_acc), eval_steps, "
            "sum__predict_test_ckpt_path",
            cpu="the same choice, checked every 100 steps within the step budget",
            gpu="the same choice, checked every 250 steps within the step budget",
            paper=SAME,
            why="checks as often as the shorter budgets allow (train.select_best)"),
        row("data", "alphabet",
            "copy and reverse: 100 T5 tokens that stay one token when repeated; Copy (Repeat): "
            "one token of that list, truncated to the examples per length",
            f"{REPO} scripts/dataset_builders/make_copy_dataset.py, make_reverse_dataset.py "
            "(get_unique_tokens)",
            **{s: "100 symbols; count_copy: one of the same 100" for s in SCALES},
            why="the list's length for count_copy depends on the T5 tokenizer, not available "
            "here; the repeated symbol carries no information in that task"),
        row("data", "lengths", "train 2-20, uniform over lengths; test 21-40",
            f"{REPO} make_copy_dataset.py (--train_min); {RESULTS}: pred/valid_acc_2..20, "
            "pred/test_acc_21..40",
            **{s: "train 1-20, uniform; test 21-40" for s in SCALES},
            why="TrainConfig draws 1..train_length: n = 1 is 5% of the training sequences, all "
            "shorter than any test length"),
        row("data", "format",
            "`Copy: x_1 .. x_n [SEP] y_1 .. y_n </s>` (`Reverse:`) in T5 SentencePiece "
            "tokens, the prefix and [SEP] several tokens each; loss on the answer and </s>; no "
            "scratchpad", f"{REPO} src/data/data_instance_processor/copy_instance_processor.py, "
            "configs/data/s2s_copy.jsonnet; run groups without _scratchpad in "
            "results/sanity_check.jsonl",
            **{s: "`i_1 i_2 x_1 .. x_n SEP s_2 s_3 s_4 y_1 .. y_n END`: 2 instruction tokens "
               "and a separator of 4 (task options prefix 2, separator 4), one token per symbol; "
               "loss on the answer and END" for s in SCALES},
            why="T5's tokenizer is not available here: the instruction and the separator are "
            "tokens of their own, as many as the pieces we count for \"Copy:\" and \"[SEP]\". "
            "Not neutral: without the instruction every position of a count_copy prompt looks "
            "the same to a relative encoding (docs/notes/t5-count-copy.md)"),
        row("data", "training set",
            "a fixed set of 100,000 sequences, about 26 epochs",
            f"{RESULTS}: sum__num_train_samples, sum__train/epoch",
            **{s: "fresh sequences at every step" for s in SCALES},
            why="tasks sample on device at every step, the codebase's only mode; a fixed set "
            "is seen 26 times there, which we do not reproduce"),
        row("evaluation", "metric",
            "exact match of the greedily generated answer, generation ending at </s>",
            f"{REPO} src/analyzers/seq2seq_analyzer.py; {RESULTS}: generation_num_beams 1",
            **{s: SAME for s in SCALES}),
        row("evaluation", "test set", "500 sequences at each length 21-40",
            f"{RESULTS}: sum__pred/test_num_samples 10,000",
            **{s: f"{SCALES[s]['eval_batch']} sequences at each length 21-40 (and 2-20, the "
               "validation lengths)" if s != "paper" else SAME for s in SCALES},
            why="scaled down for 2 CPU cores"),
        row("aggregation", "per task",
            "mean over 3 seeds of the exact match over all test sequences (pred/test_acc_overall)",
            f"{REPO} notebooks/plot_aggregate_final.ipynb",
            **{s: SAME for s in SCALES}),
        row("aggregation", "mean reciprocal rank",
            "per (task, seed) query, encodings ranked by overall exact match (ties in file "
            "order); MRR over queries of every task and scratchpad format of the paper",
            f"{REPO} notebooks/plot_aggregate_final.ipynb (get_mrr_df)",
            **{s: "the same computation over copy, count_copy and reverse, for the paper "
               "(recomputed from the released runs) and for us" for s in SCALES},
            why="we run three of their tasks, so the published MRR (over tasks we do not run) "
            "is recomputed on ours for both sides"),
    ),
)  # fmt: skip

# -- the paper's numbers -------------------------------------------------------------------------

# Recomputed from McGill-NLP/length-generalization results/sanity_check.jsonl (commit
# 40f8a445f976d795ff0e19fc2b7530e36386eabc) by experiments/mcgill_paper_numbers.py: 45 runs, the
# tasks copy (split cmc_tr20_ts40), count_copy (rsc_tr20_ts40), reverse (mc_tr20_ts40), 5
# encodings, 3 seeds. Exact match over lengths 21-40: mean, sample std over the seeds.
PAPER_EXACT_MATCH = {
    ("copy", "alibi"): (0.3310, 0.0124),
    ("copy", "nope"): (0.3054, 0.0233),
    ("copy", "rope"): (0.0114, 0.0074),
    ("copy", "sinusoidal"): (0.0277, 0.0048),
    ("copy", "t5"): (0.4195, 0.0139),
    ("count_copy", "alibi"): (0.2893, 0.0303),
    ("count_copy", "nope"): (0.9856, 0.0061),
    ("count_copy", "rope"): (0.0002, 0.0003),
    ("count_copy", "sinusoidal"): (0.0000, 0.0000),
    ("count_copy", "t5"): (0.7712, 0.0527),
    ("reverse", "alibi"): (0.1709, 0.0114),
    ("reverse", "nope"): (0.2301, 0.0098),
    ("reverse", "rope"): (0.0774, 0.0749),
    ("reverse", "sinusoidal"): (0.0230, 0.0116),
    ("reverse", "t5"): (0.2423, 0.0228),
}
# The same runs, mean over seeds at each length 21, 22, ..., 40 (their Figure's curves).
PAPER_BY_LENGTH = {
    ("copy", "alibi"): (.823, .769, .815, .751, .734, .713, .637, .568, .444, .229, .095, .035,
                        .005, .003, .000, .000, .000, .000, .000, .000),
    ("copy", "nope"): (.788, .743, .777, .722, .704, .687, .593, .499, .339, .173, .053, .025,
                       .004, .001, .000, .000, .000, .000, .000, .000),
    ("copy", "rope"): (.037, .000, .000, .000, .000, .000, .000, .000, .000, .000, .000, .000,
                       .000, .067, .097, .028, .000, .000, .000, .000),
    ("copy", "sinusoidal"): (.543, .012, .000, .000, .000, .000, .000, .000, .000, .000, .000,
                             .000, .000, .000, .000, .000, .000, .000, .000, .000),
    ("copy", "t5"): (.803, .764, .803, .747, .729, .715, .669, .677, .659, .555, .465, .368,
                     .235, .129, .051, .017, .002, .002, .001, .000),
    ("count_copy", "alibi"): (.999, .998, .996, .983, .924, .638, .218, .029, .000, .000, .000,
                              .000, .000, .000, .000, .000, .000, .000, .000, .000),
    ("count_copy", "nope"): (.999, .997, .997, .993, .998, .993, .988, .991, .991, .989, .990,
                             .987, .985, .987, .984, .977, .964, .975, .963, .963),
    ("count_copy", "rope"): (.004, .000, .000, .000, .000, .000, .000, .000, .000, .000, .000,
                             .000, .000, .000, .000, .000, .000, .000, .000, .000),
    ("count_copy", "sinusoidal"): (.000,) * 20,
    ("count_copy", "t5"): (1.00, .998, .997, .993, .996, .993, .983, .984, .951, .941, .880,
                           .836, .759, .690, .613, .520, .445, .355, .281, .212),
    ("reverse", "alibi"): (.997, .986, .938, .451, .045, .001, .000, .000, .000, .000, .000,
                           .000, .000, .000, .000, .000, .000, .000, .000, .000),
    ("reverse", "nope"): (.991, .979, .953, .805, .542, .235, .076, .019, .001, .000, .000,
                          .000, .000, .000, .000, .000, .000, .000, .000, .000),
    ("reverse", "rope"): (.789, .327, .294, .132, .005, .000, .000, .000, .000, .000, .000,
                          .000, .000, .000, .000, .000, .000, .000, .000, .000),
    ("reverse", "sinusoidal"): (.461, .000, .000, .000, .000, .000, .000, .000, .000, .000,
                                .000, .000, .000, .000, .000, .000, .000, .000, .000, .000),
    ("reverse", "t5"): (.994, .985, .957, .845, .608, .313, .117, .019, .005, .000, .000, .000,
                        .000, .000, .000, .000, .000, .000, .000, .000),
}  # fmt: skip
# Mean reciprocal rank over the 9 (task, seed) queries of these three tasks, their method.
PAPER_MRR = {"t5": 0.7778, "nope": 0.6852, "alibi": 0.3611, "rope": 0.2370, "sinusoidal": 0.2222}
PUBLISHED_MRR = {"nope": 0.69, "t5": 0.55, "alibi": 0.50, "rope": 0.33, "sinusoidal": 0.22}
"""The paper's MRR over all its tasks and scratchpad formats (not comparable with ours)."""
TIE_ORDER = ("rope", "alibi", "nope", "sinusoidal", "t5")
"""Their notebook breaks ties by row order; the encodings first appear in this order in
sanity_check.jsonl."""


def _labels() -> tuple[dict[str, str], dict[str, str]]:
    """Task label -> our task name, and encoding label -> the paper's name for it."""
    return (
        {task_label(t): name for name, t in TASKS.items()},
        {e.label(): name for name, e in PAPER_ENCODINGS.items()},
    )


def per_seed(rows: list[dict]) -> dict[tuple[str, str], dict[int, tuple[float, bool | None]]]:
    """(task name, encoding label) -> seed -> (exact match over 21-40, fit verdict), for the runs
    evaluated at every test length."""
    task_names, _ = _labels()
    values: dict[tuple[str, str, int], dict[int, float]] = defaultdict(dict)
    fit: dict[tuple[str, str, int], bool | None] = {}
    for r in rows:
        if r.get("failed_step") is not None or r["length"] not in TEST_LENGTHS:
            continue
        key = (task_names.get(r["task"], r["task"]), r["encoding"], r["seed"])
        values[key][r["length"]] = r["exact_match"]
        fit[key] = r.get("fit")
    out: dict[tuple[str, str], dict[int, tuple[float, bool | None]]] = defaultdict(dict)
    for (task, enc, seed), by_length in values.items():
        if len(by_length) == len(TEST_LENGTHS):
            out[(task, enc)][seed] = (statistics.fmean(by_length.values()), fit[(task, enc, seed)])
    return out


def mean_reciprocal_rank(
    scores: dict[tuple[str, str], dict[int, tuple[float, bool | None]]], fit_only: bool
) -> dict[str, float]:
    """Paper encoding name -> MRR over (task, seed) queries that have all five, ranked as their
    notebook ranks; `fit_only`: an unfit run ranks below every fit one."""
    _, paper_names = _labels()
    queries: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    for (task, label), by_seed in scores.items():
        if label in paper_names:
            for seed, (value, fit) in by_seed.items():
                queries[(task, seed)][paper_names[label]] = (
                    value if fit is not False or not fit_only else value - 2.0
                )
    reciprocal: dict[str, list[float]] = defaultdict(list)
    for got in queries.values():
        if set(got) != set(TIE_ORDER):
            continue
        ranked = sorted(TIE_ORDER, key=lambda e: (-got[e], TIE_ORDER.index(e)))
        for rank, name in enumerate(ranked, start=1):
            reciprocal[name].append(1.0 / rank)
    return {e: statistics.fmean(v) for e, v in reciprocal.items()}


def paper_vs_here(rows: list[dict]) -> str:
    """Per task, the paper's exact match over 21-40 (recomputed from its released runs) beside
    ours, with fit counts and order verdicts; T5 as the paper ran it beside ours; and the mean
    reciprocal rank over these three tasks, theirs and ours computed the same way."""
    task_labels = {name: task_label(t) for name, t in TASKS.items()}
    published = {
        (task_labels[task], PAPER_ENCODINGS[enc].label()): mean
        for (task, enc), (mean, _) in PAPER_EXACT_MATCH.items()
    }
    present = {r["task"] for r in rows}
    published = {k: v for k, v in published.items() if k[0] in present}
    out = [
        summary.published_table(
            rows,
            published,
            metric="exact_match",
            lengths=TEST_LENGTHS,
            source="Kazemnejad et al. 2023, recomputed from their released runs "
            "(results/sanity_check.jsonl, experiments/mcgill_paper_numbers.py): exact match at "
            "lengths 21-40 after training on <= 20, mean over 3 seeds",
        )
    ]
    scores = per_seed(rows)
    lines = [
        "",
        "T5 as the paper ran it (one table for all layers) vs ours (a table per layer), both on "
        "unscaled logits, exact match at 21-40, mean ± std over seeds (fit/seeds):",
        "",
        "| task | paper's T5 here | our T5 | paper (their runs) |",
        "|---|---|---|---|",
    ]
    for task in TASKS:
        cells = []
        for enc in (PAPER_ENCODINGS["t5"], encodings.get("t5")):
            got = scores.get((task, enc.label()), {})
            values = [v for v, _ in got.values()]
            fit = sum(f is not False for _, f in got.values())
            cells.append(f"{summary.mean_and_spread(values)} ({fit}/{len(got)})" if got else "-")
        mean, std = PAPER_EXACT_MATCH[(task, "t5")]
        if any(c != "-" for c in cells):
            lines.append(f"| {task} | {cells[0]} | {cells[1]} | {mean:.3f} ± {std:.3f} |")
    if len({t for t, _ in scores}) == len(TASKS):
        every, fit_only = (mean_reciprocal_rank(scores, f) for f in (False, True))
        lines += ["", "Mean reciprocal rank over (task, seed) queries of copy, count_copy and "
                  "reverse, ranked by exact match at 21-40 (their notebook's computation):", "",
                  "| encoding | paper, these tasks | here, every run | here, unfit runs last | "
                  "paper as published (all its tasks) |", "|---|---|---|---|---|"]  # fmt: skip
        for name in PAPER_MRR:
            lines.append(
                f"| {name} | {PAPER_MRR[name]:.2f} | {every.get(name, float('nan')):.2f} | "
                f"{fit_only.get(name, float('nan')):.2f} | {PUBLISHED_MRR[name]:.2f} |"
            )
    return "\n".join(out + lines) + "\n"


def headline(rows: list[dict]) -> dict[str, list[tuple[str, list[int], list[float], bool]]]:
    """The paper's figure on our axes: per task, exact match at each length 21-40 of the five
    encodings, theirs (is_paper True) and ours (mean over every seed)."""
    task_names, paper_names = _labels()
    ours: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for r in rows:
        if r.get("failed_step") is None and r["length"] in TEST_LENGTHS:
            ours[(task_names.get(r["task"], ""), r["encoding"], r["length"])].append(
                r["exact_match"]
            )
    panels: dict[str, list[tuple[str, list[int], list[float], bool]]] = {}
    for task in TASKS:
        series = []
        for name, enc in PAPER_ENCODINGS.items():
            series.append((name, list(TEST_LENGTHS), list(PAPER_BY_LENGTH[(task, name)]), True))
            got = [ours.get((task, enc.label(), n)) for n in TEST_LENGTHS]
            if all(got):
                series.append((name, list(TEST_LENGTHS), [statistics.fmean(g) for g in got],
                               False))  # fmt: skip
        panels[f"{task}: exact match"] = series
    return panels
