"""Does keeping only the highest fraction p of RoPE's frequencies extrapolate better than RoPE?

Follows Barbero et al. 2025, "Round and Round We Go! What makes Rotary Positional Encodings
useful?" (https://arxiv.org/abs/2410.06205), which measured p-RoPE at the training context and
left extrapolation open: p in {0, 0.25, 0.5, 0.75, 1} (0 is NoPE, 1 is RoPE) on copy, reverse
and offset, trained on 1-16 symbols until fit (STANDARD_SCALES) and evaluated at 1x-8x, 3 seeds.
The paper's protocol beside ours is PROTOCOL below; the generated page shows it.

    pe-research sweep prope --workers 2    # cpu: 45 runs in 15 trainings, about 45 min on 2 cores
    pe-research sweep prope --scale gpu    # 4 layers, d_model 256, 1-32 symbols

Results: docs/results/prope/summary.md and docs/reproductions.md.
What the frequencies kept show: docs/notes/rotary-frequencies.md.
"""

import statistics

from pe_research import encodings, tasks
from pe_research.config import RunConfig
from pe_research.sweeps import describe, summary
from pe_research.sweeps.experiments import STANDARD_SCALES
from pe_research.sweeps.protocol import SAME, Protocol, row

PS = (0.0, 0.25, 0.5, 0.75, 1.0)
TASKS = ["copy", "reverse", "offset"]
SCALES = STANDARD_SCALES
SEEDS = (0, 1, 2)


def runs(scale: str = "cpu") -> list[RunConfig]:
    model, train = SCALES[scale]
    return [
        RunConfig(task=tasks.get(task),
                  encoding=encodings.get("rope", p=p), model=model, train=train, seed=seed)
        for task in TASKS
        for p in PS
        for seed in SEEDS
    ]  # fmt: skip


PAPER = "arXiv 2410.06205"
NO_DATA = (
    "the paper's language models, data and compute are not available on this machine; the "
    "experiment asks its open question (does p-RoPE extrapolate better?) of synthetic tasks"
)
PROTOCOL = Protocol(
    paper=f"Barbero et al. 2025, Round and Round We Go! What makes Rotary Positional Encodings "
    f"useful? ({PAPER})",
    scales=tuple(SCALES),
    rows=(
        row("model", "sizes", "Gemma-family decoder language models (billions of parameters)",
            f"{PAPER}, Section 6", **{n: describe.sizes(s[0]) for n, s in SCALES.items()},
            why=NO_DATA, verified=False),
        row("optimisation", "training", "language-model pre-training", f"{PAPER}, Section 6",
            **{n: describe.optimiser(s[1]) + "; " + describe.schedule(s[1])
               for n, s in SCALES.items()}, why=NO_DATA, verified=False),
        row("data", "data", "text corpora", f"{PAPER}, Section 6",
            **{n: f"copy, reverse, offset (k = 3), 1-{s[1].train_length} symbols"
               for n, s in SCALES.items()}, why=NO_DATA, verified=False),
        row("positions", "p-RoPE",
            "RoPE on the highest fraction p of its frequencies, the others left unrotated",
            f"{PAPER}, Section 6", **{s: SAME for s in SCALES}),
        row("evaluation", "metric",
            "perplexity at the training context (extrapolation left open)", f"{PAPER}, Section 6",
            **{s: "token and exact-match accuracy at 1x-8x the training length" for s in SCALES},
            why="extrapolation is the question asked here, which the paper did not measure",
            verified=False),
        row("aggregation", "comparison", "p-RoPE against RoPE", f"{PAPER}, Section 6",
            **{s: "3 seeds, fit runs only; better / worse when the difference from RoPE exceeds "
               "twice the larger std" for s in SCALES},
            why="seeds and the fit verdict give the spread a comparison needs", verified=False),
    ),
)  # fmt: skip


def paper_vs_here(rows: list[dict]) -> str:
    """Barbero et al. (2025) left open whether p-RoPE extrapolates better than RoPE: per task
    and p, token accuracy beyond the training length (2x-8x) of the fit seeds, and its
    difference from RoPE (p = 1) against the seeds' spread."""
    lengths = sorted({r["length"] for r in rows if r["length"] > r["train_length"]})
    means = summary.per_run_means(rows, "token_accuracy", lengths)
    lines = [
        "Barbero et al. 2025 (open question): does keeping only the highest fraction p of RoPE's "
        f"frequencies extrapolate better than RoPE? Token accuracy over lengths "
        f"{', '.join(map(str, lengths))}, mean ± std over the fit seeds (fit / seeds); "
        "better/worse: the difference from RoPE exceeds twice the larger std.",
        "",
        "| task | p | beyond training length | vs RoPE |",
        "|---|---|---|---|",
    ]
    for task in sorted({t for t, _ in means}):
        fit = {e: [m for m, f in v if f] for (t, e), v in means.items() if t == task}
        seeds = {e: len(v) for (t, e), v in means.items() if t == task}
        rope = fit.get("rope", [])
        for name in sorted(fit, key=lambda e: (e != "rope", e)):
            values = fit[name]
            cell = summary.mean_and_spread(values) if values else "-"
            verdict = "-"
            if name != "rope" and len(values) > 1 and len(rope) > 1:
                diff = statistics.fmean(values) - statistics.fmean(rope)
                noise = 2 * max(statistics.stdev(values), statistics.stdev(rope))
                word = "better" if diff > noise else "worse" if diff < -noise else "same"
                verdict = f"{diff:+.3f} ({word})"
            lines.append(f"| {task} | {name} | {cell} ({len(values)}/{seeds[name]}) | {verdict} |")
    return "\n".join(lines) + "\n"
