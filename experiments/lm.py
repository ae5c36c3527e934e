"""Does a language model's loss stay flat past its training context, per encoding, on real text?

Follows Press et al. 2022, "Train Short, Test Long: Attention with Linear Biases Enables Input
Length Extrapolation" (https://arxiv.org/abs/2108.12409), Figure 1, on bytes: NoPE, sinusoidal,
learned, RoPE, ALiBi and T5 trained at context L, and the trained RoPE evaluated with the linear,
NTK, dynamic NTK and YaRN scalings (factor 8); validation bits per byte at 1x-8x L on the same
non-overlapping windows for every encoding; 3 seeds. The corpus is data/kjv.txt (the last 10%
held out; PE_RESEARCH_CORPUS names another file); nothing is downloaded. Write it once with

    sudo apt-get install bible-kjv && mkdir -p data && bible -f 'Gen1:1-Rev22:21' > data/kjv.txt

The paper's protocol beside ours is PROTOCOL below; the generated page shows it.

    pe-research sweep lm                 # cpu: 30 runs in 6 trainings, about 10 min on 2 cores
    pe-research sweep lm --scale gpu     # 6 layers, d_model 384, 10,000 steps at 256 bytes

Results: docs/results/lm/summary.md and docs/reproductions.md.
"""

import dataclasses
import os
import statistics

from pe_research import encodings, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.sweeps import describe, summary
from pe_research.sweeps.protocol import SAME, Protocol, row

CORPUS = os.environ.get("PE_RESEARCH_CORPUS", "data/kjv.txt")
METRIC = "bits_per_byte"  # the sweep's summary.md reports this unless --metric says otherwise

SCALES = {
    "cpu": (ModelConfig(num_layers=2, d_model=64, num_heads=4, mlp_dim=256),
            TrainConfig(steps=500, batch_size=16, train_length=128, learning_rate=3e-3),
            EvalConfig(batch_size=32)),
    "gpu": (ModelConfig(num_layers=6, d_model=384, num_heads=6, mlp_dim=1536),
            TrainConfig(steps=10000, batch_size=64, train_length=256, learning_rate=1e-3,
                        warmup_steps=500, log_every=200),
            EvalConfig(batch_size=64)),
}  # fmt: skip
SCALINGS = ("linear", "ntk", "dynamic", "yarn")
SEEDS = (0, 1, 2)


def rope_scalings(train_length: int, factor: float = 8.0) -> list[dict]:
    """RoPE scalings with factor 8 (the longest evaluation over the training length); the
    original context is the training length (one byte per position)."""
    orig = {"original_max_position_embeddings": train_length}
    return [
        {"rope_type": s, "factor": factor, **(orig if s in ("dynamic", "yarn") else {})}
        for s in SCALINGS
    ]


def runs(scale: str = "cpu") -> list[RunConfig]:
    model, train, evaluation = SCALES[scale]
    L = train.train_length
    base = RunConfig(
        task=tasks.get("byte_lm", corpus=CORPUS),
        encoding=encodings.get("rope"),
        model=model,
        train=train,
        eval=evaluation,
    )
    trained = [
        encodings.get("nope"),
        encodings.get("sinusoidal"),
        encodings.get("learned", max_positions=8 * L),
        encodings.get("rope"),
        encodings.get("alibi"),
        encodings.get("t5"),
    ]
    out = [dataclasses.replace(base, encoding=e) for e in trained]
    out += [
        dataclasses.replace(base, eval_encoding=encodings.get("rope", scaling=s))
        for s in rope_scalings(L)
    ]
    return [dataclasses.replace(cfg, seed=seed) for cfg in out for seed in SEEDS]


PAPER = "arXiv 2108.12409"
NO_DATA = (
    "WikiText-103 and a model of that size are not available on this machine (nothing is "
    "downloaded): the experiment asks the paper's question of a byte-level corpus at a size "
    "2 CPU cores (cpu) or one accelerator (gpu) can train"
)
PROTOCOL = Protocol(
    paper=f"Press et al. 2022, Train Short, Test Long: Attention with Linear Biases Enables "
    f"Input Length Extrapolation ({PAPER})",
    scales=tuple(SCALES),
    rows=(
        row("model", "sizes",
            "16 layers, d_model 1024, 8 heads, MLP 4096, adaptive input embeddings (247M "
            "parameters; the WikiText-103 model of Baevski and Auli 2019)",
            f"{PAPER}, Section 2", **{n: describe.sizes(s[0]) for n, s in SCALES.items()},
            why=NO_DATA, verified=False),
        row("optimisation", "training",
            "Baevski and Auli's WikiText-103 recipe, training subsequences of L = 512 tokens "
            "(64 to 3,072 in other runs)", f"{PAPER}, Sections 2 and 4",
            **{n: describe.optimiser(s[1]) + "; " + describe.schedule(s[1]) + f"; L = "
               f"{s[1].train_length} bytes" for n, s in SCALES.items()},
            why=NO_DATA, verified=False),
        row("data", "corpus", "WikiText-103, word-level", f"{PAPER}, Section 2",
            **{s: "the King James Bible as bytes (data/kjv.txt), the last 10% held out"
               for s in SCALES}, why=NO_DATA),
        row("positions", "encodings", "sinusoidal, rotary, T5 bias, ALiBi",
            f"{PAPER}, Figure 1", **{s: SAME for s in SCALES}),
        row("evaluation", "metric and lengths",
            "validation perplexity at inference lengths from L up to several times L",
            f"{PAPER}, Figure 1",
            **{s: "validation bits per byte at 1x-8x L, non-overlapping windows, the same "
               "windows for every encoding" for s in SCALES},
            why="bytes, not words, so bits per byte rather than perplexity; the question (flat "
            "or degrading with length) is the same", verified=False),
        row("aggregation", "verdict",
            "one curve per encoding: ALiBi flat from L to several L, the others degrade",
            f"{PAPER}, Figure 1",
            **{s: "3 seeds, mean ± std; flat when 8x - 1x is within twice the seeds' spread"
               for s in SCALES},
            why="seeds give the spread that the flat / degrades call needs"),
    ),
)  # fmt: skip

PRESS_2022 = ("alibi", "sinusoidal", "rope")
"""Press et al. (2022), Figure 1: ALiBi's perplexity stays flat as evaluation grows past the
training length while sinusoidal and rotary degrade."""


def paper_vs_here(rows: list[dict]) -> str:
    """Bits per byte at 1x and 8x the training length for the encodings of Press et al.'s
    figure, mean ± std over seeds, and whether each degrades (8x - 1x above the seeds' spread)."""
    lines = [
        "Press et al. 2022: ALiBi stays flat from 1x to 8x the training length; sinusoidal and "
        "RoPE degrade. Here: validation bits per byte (lower is better), mean ± std over seeds.",
        "",
        "| encoding | 1x | 8x | 8x - 1x | paper | here |",
        "|---|---|---|---|---|---|",
    ]
    L = rows[0]["train_length"] if rows else 0
    at = {k: summary.per_run_means(rows, METRIC, [k * L]) for k in (1, 8)}
    for name in PRESS_2022:
        # The task label names the corpus, so runs are found by their encoding.
        one, eight = ([m for (_, e), ms in at[k].items() if e == name for m in ms] for k in (1, 8))
        if not one or not eight:
            lines.append(f"| {name} | - | - | - | - | not run |")
            continue
        a, b = [m for m, _ in one], [m for m, _ in eight]
        deltas = [y - x for x, y in zip(a, b, strict=True)]
        spread = max(statistics.stdev(a) if len(a) > 2 else 0.0, 0.02)
        here = "degrades" if statistics.fmean(deltas) > 2 * spread else "flat"
        paper = "flat" if name == "alibi" else "degrades"
        lines.append(
            f"| {name} | {summary.mean_and_spread(a)} | {summary.mean_and_spread(b)} | "
            f"{summary.mean_and_spread(deltas)} | {paper} | {here} |"
        )
    lines += ["", "Flat: 8x - 1x within twice the seeds' spread at 1x (at least 0.02 bits)."]
    return "\n".join(lines) + "\n"
