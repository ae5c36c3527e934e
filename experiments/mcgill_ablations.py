"""What separates T5 on count_copy here (exact match near 0 at 21-40) from Kazemnejad et al.'s .77?

mcgill's cpu scale on count_copy alone, T5 as the paper ran it, NoPE and ALiBi, 3 seeds, with one
difference from the paper undone at a time (VARIANTS): the paper's instance format (an
instruction before the prompt and a separator of several tokens), its checkpoint selection (the
best on validation lengths 2-20 within the step budget, not the first fit), its learning rate,
its 12 heads, and no weight decay on the bias table (Hugging Face's Trainer exempts it); and
for T5 alone, the instance format with the best of four times the budget (ONLY).
Kazemnejad et al. 2023 (https://arxiv.org/abs/2305.19466); protocol: experiments/mcgill.py.

    pe-research sweep mcgill_ablations --workers 2 --results docs/results/mcgill_ablations

Cost: cpu, 66 runs in 22 trainings, about 3 h on 2 CPU cores with two workers: a group of 3
seeds 8-16 min, the 8,000-step group 77 min. Results: docs/results/mcgill_ablations/summary.md;
what they show: docs/notes/t5-count-copy.md.
"""

import dataclasses

from pe_research import encodings, tasks
from pe_research.config import EvalConfig, RunConfig
from pe_research.experiments import mcgill
from pe_research.sweeps import summary
from pe_research.sweeps.experiments import FIT_TRAIN

BASE = mcgill.SCALES["cpu"]
TASK = tasks.get("count_copy", alphabet=100)
"""count_copy without the paper's instance format: no instruction, a separator of one SEP."""
FIRST_FIT = dataclasses.replace(FIT_TRAIN, train_length=mcgill.TRAIN_LENGTH)
"""Training to the first fit instead of the paper's checkpoint selection: until exact match at 20
is >= .95 (checked every 100 steps), within 2,000 steps."""
ENCODINGS = {
    "t5": mcgill.PAPER_ENCODINGS["t5"],
    "nope": encodings.get("nope"),
    "alibi": encodings.get("alibi"),
}
SEEDS = (0, 1, 2)
EVAL = EvalConfig(lengths=tuple(range(2, 41)), batch_size=BASE["eval_batch"])
"""Every length 2-40: 2-20 the paper's validation lengths, 21-40 its test lengths."""
BEST = dict(stop_when_fit=False, select_best=True, select_every=100)
"""The paper's checkpoint selection within mcgill's 2,000-step cap: the best validation exact
match (lengths 2-20), checked every 100 steps, instead of the first fit."""
PAPER_LR = dict(learning_rate=3e-5, lr_schedule="linear", warmup_steps=120, weight_decay=0.05)
"""The paper's AdamW: lr 3e-5, linear decay after 6% warm-up, weight decay 0.05."""
INSTANCE = dict(prefix=2, separator=4)
"""`Copy: ... [SEP] ...` in T5's SentencePiece pieces as we count them: "Copy:" is 2 pieces and
"[SEP]" 4 (▁[, S, EP, ]); T5's tokenizer is not available here to check the count."""

VARIANTS = {
    "first fit": {},
    "instruction": {"task": INSTANCE},
    "best of budget": {"train": BEST},
    "instruction, best of budget": {"task": INSTANCE, "train": BEST},
    "table not decayed": {"train": {"decay_encoding": False}},
    "12 heads": {"model": {"num_heads": 12, "d_model": 96, "mlp_dim": 384}},
    "paper lr, best of budget": {"train": {**BEST, **PAPER_LR}},
    "instruction, best of 8,000 steps": {
        "task": INSTANCE,
        "train": {**BEST, "steps": 8000, "select_every": 250},
    },
}
"""What each variant changes in mcgill's cpu configuration (task, model, train options)."""
ONLY = {"instruction, best of 8,000 steps": ("t5",)}
"""Variants run for some encodings only: the paper chose T5's count_copy checkpoints at steps
20,000-28,000 of 40,000, so T5 alone gets four times the 2,000-step budget."""


def config(variant: str, encoding: str, seed: int) -> RunConfig:
    change = VARIANTS[variant]
    return RunConfig(
        task=dataclasses.replace(TASK, **change.get("task", {})),
        encoding=ENCODINGS[encoding],
        model=dataclasses.replace(BASE["model"], **change.get("model", {})),
        train=dataclasses.replace(FIRST_FIT, **change.get("train", {})),
        eval=EVAL,
        seed=seed,
    )


def runs() -> list[RunConfig]:
    return [
        config(v, e, s) for v in VARIANTS for e in ONLY.get(v, ENCODINGS) for s in SEEDS
    ]  # fmt: skip


def variant(cfg: RunConfig) -> str:
    """The variant a run belongs to (its series is "ENCODING | VARIANT")."""
    for name in VARIANTS:
        if config(name, _encoding_name(cfg), cfg.seed) == cfg:
            return name
    return "other"


def _encoding_name(cfg: RunConfig) -> str:
    return next(name for name, enc in ENCODINGS.items() if enc == cfg.encoding)


def sections(rows: list[dict]) -> str:
    """The ablation table: exact match over 21-40 per variant and encoding, mean ± std over
    seeds (fit seeds / seeds), beside the paper's numbers recomputed from its released runs."""
    scores: dict[tuple[str, str], list[tuple[float, bool]]] = {}
    per_run: dict[str, dict[int, float]] = {}
    meta: dict[str, tuple[str, str, bool]] = {}
    for r in rows:
        if r.get("failed_step") is not None or r["length"] not in mcgill.TEST_LENGTHS:
            continue
        encoding, _, name = r["encoding"].partition(" | ")
        per_run.setdefault(r["run"], {})[r["length"]] = r["exact_match"]
        meta[r["run"]] = (name, encoding, bool(r.get("fit")))
    for run, by_length in per_run.items():
        if len(by_length) == len(mcgill.TEST_LENGTHS):
            name, encoding, fit = meta[run]
            mean = sum(by_length.values()) / len(by_length)
            scores.setdefault((name, encoding), []).append((mean, fit))
    labels = {name: enc.label() for name, enc in ENCODINGS.items()}
    body = []
    for name in VARIANTS:
        line = [name]
        for enc in ENCODINGS:
            got = scores.get((name, labels[enc]), [])
            fit = sum(f for _, f in got)
            if enc not in ONLY.get(name, ENCODINGS):
                line.append("-")
                continue
            line.append(
                f"{summary.mean_and_spread([v for v, _ in got])} ({fit}/{len(got)})"
                if got else "not run"
            )  # fmt: skip
        body.append(line)
    paper = ["paper (their runs)"] + [
        "{:.3f} ± {:.3f}".format(*mcgill.PAPER_EXACT_MATCH[("count_copy", enc)])
        for enc in ENCODINGS
    ]
    table = summary.markdown_table(["variant", *ENCODINGS], [*body, paper])
    return (
        "## The ablations\n\nExact match on count_copy over lengths 21-40 (trained on 1-20), "
        "mean ± std over seeds (fit seeds / seeds); each variant undoes one difference from the "
        "paper in the first-fit protocol without an instruction (VARIANTS); -: not in the grid "
        "(ONLY).\n\n" + "\n".join(table) + "\n"
    )
