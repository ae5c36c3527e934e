"""Which encoding generalizes on which task? Every encoding on every 1-D task, in one table.

Every registered encoding at its defaults, plus ASEntmax (NAPE under entmax15 attention,
Vasylenko et al. 2025, https://arxiv.org/abs/2506.16640), on every 1-D task with an exact match:
the fit recipe on 1-16 symbols, evaluated at 16-128 (1x-8x), 3 seeds; a score counts unfit seeds
as 0 (pe_research/sweeps/leaderboard.py). M-RoPE reads text at its index on all three axes and
HoPE takes train_length 16 (OPTIONS); LEFT_OUT says what is left out and where it is studied.

    pe-research sweep leaderboard --workers 2 --tasks copy   # one row, 84 runs
    pe-research sweep leaderboard --workers 2 --shard 1/4    # a quarter (1/4 .. 4/4)
    pe-research sweep leaderboard --scale gpu

Cost: cpu, 924 runs in 308 trainings, about 18 h on 2 CPU cores (25 min to 3 h a row): run it
by rows over several sessions; it resumes where it stopped. gpu: at least 0.5 h on one H200
(the sweep prints its estimate). Addition and multiplication are left out (TASKS_LEFT_OUT).
Results: docs/results/leaderboard/summary.md (the leaderboard, and heatmaps at 2x and 8x).
What the rows show, and how the tasks differ from the papers': docs/notes/leaderboard.md.
"""

import dataclasses

from pe_research import encodings, positions, tasks
from pe_research.config import ModelConfig, RunConfig
from pe_research.sweeps import leaderboard
from pe_research.sweeps.experiments import FIT_MODEL, FIT_TRAIN, GPU_MODEL, gpu_train

TASKS = [
    "copy", "reverse", "offset", "duplicate", "count_copy", "sort", "flip_flop", "selective_copy",
    "counting", "mqar", "local_count",
]  # fmt: skip
TASKS_LEFT_OUT = {
    "addition": "under the fit recipe no encoding learns it at the training length (every run "
    "ran to the step cap near chance); the encodings made for it learn it with their papers' "
    "formats and longer training, which experiments/addition.py (position coupling) and "
    "experiments/addition_hints.py (index hints) run, at a cost per pack that would make this "
    "row cost more than the others together (docs/notes/leaderboard.md)",
    "multiplication": "under the fit recipe no encoding learns it at the training length (every "
    "run near chance); the papers that teach it use their own embeddings, deeper models and "
    "far longer training (Abacus: McLeish et al. 2024, arXiv 2405.17399), beyond this scale",
}
"""Registered 1-D tasks this table leaves out, and why: rows where every encoding stays at chance
measure the recipe, not the encodings."""
LEFT_OUT = {
    "rope_nd": "needs 2-D positions: experiments/grid2d.py",
    "grid": "2-D positions: experiments/grid2d.py",
    "video": "3-D positions: experiments/mrope_video.py",
    "byte_lm": "no exact match to fit: experiments/lm.py",
}
"""Registered encodings and tasks this table leaves out, and where they are studied."""
ASENTMAX = "nape [entmax15]"
SEEDS = (0, 1, 2)
TRAIN_LENGTH = 16
SCALES = {
    "cpu": (FIT_MODEL, FIT_TRAIN),
    "gpu": (
        GPU_MODEL,
        gpu_train(train_length=TRAIN_LENGTH, stop_when_fit=True, fit_check_every=100,
                  log_every=100, length_buckets=4),
    ),
}  # fmt: skip
CLAIMS = {
    task: "ASEntmax: 'up to 1000x length extrapolation on synthetic benchmarks' (Vasylenko et "
    "al. 2025, arXiv 2506.16640 v3, abstract); evaluated here to 8x only"
    for task in ("copy", "reverse", "sort", "flip_flop")
}


OPTIONS = {"hope": {"train_length": TRAIN_LENGTH}}
"""Options other than the defaults: HoPE with one train_length for every task, as
experiments/recent.py runs it."""


def _run(task: str, name: str, model: ModelConfig, train, seed: int) -> RunConfig:
    if name == ASENTMAX:
        name, model = "nape", dataclasses.replace(model, normalization="entmax15")
    encoding = encodings.get(name, **OPTIONS.get(name, {}))
    # 3-D positions (M-RoPE) on text: the mrope sampler puts each token at its index on all axes.
    sampler = positions.get("mrope" if encoding.position_axes == 3 else "contiguous")
    return RunConfig(task=tasks.get(task), encoding=encoding, model=model, train=train,
                     positions=sampler, seed=seed)  # fmt: skip


def encoding_names() -> list[str]:
    """Every registered encoding this table runs, then ASEntmax."""
    return [name for name in encodings.names() if name not in LEFT_OUT] + [ASENTMAX]


def runs(scale: str = "cpu") -> list[RunConfig]:
    model, train = SCALES[scale]
    return [
        _run(task, name, model, train, seed)
        for task in TASKS
        for name in encoding_names()
        for seed in SEEDS
    ]


def sections(rows: list[dict]) -> str:
    """The leaderboard's markdown, written at the end of summary.md."""
    left_out = "".join(f"- {task}: {why}.\n" for task, why in TASKS_LEFT_OUT.items())
    return (
        "## Leaderboard: which encoding generalizes on which task\n\n"
        + "![exact match score at 2x and 8x](leaderboard_exact_match.png)\n\n"
        + leaderboard.at_a_glance(rows)
        + "\n### Best encoding per task\n\n"
        + leaderboard.best_per_task(rows, CLAIMS)
        + "\n### Every encoding on every task\n\n"
        + leaderboard.full_table(rows)
        + "\n### Tasks left out\n\n"
        + left_out
    )


def figures(rows: list[dict]) -> dict:
    """The leaderboard's heatmaps (exact match score at 2x and 8x), which `sections` shows."""
    return {"leaderboard_exact_match": leaderboard.leaderboard_figure(rows)}
