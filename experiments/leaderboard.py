"""Every encoding on every task: one table and one heatmap of which encoding generalizes on which
task, at the main job's scale, 3 seeds, each run trained until it fits.

Command (from the repository root; it resumes where it stopped, and splits by shards and
workers like any sweep):

    pe-research sweep leaderboard --workers 2                   # cpu scale, below
    pe-research sweep leaderboard --workers 2 --shard 1/4       # a quarter of it (of 1/4 .. 4/4)
    pe-research sweep leaderboard --scale gpu                   # on an accelerator

Over several sessions whose run folders do not survive, keep each session's finished runs in
the repository and bring them back before the next shard:

    cp -rn docs/leaderboard/runs/. runs/leaderboard/ 2>/dev/null    # earlier sessions' runs
    pe-research sweep leaderboard --workers 2 --tasks copy --keep-records docs/leaderboard/runs
    pe-research sweep leaderboard --tables-only --out docs/leaderboard/runs   # the tables

(`--tasks` one task at a time rather than `--shard`: each session then adds whole rows of the
table, every encoding on that task, which its tables already compare; a sweep stopped with
Ctrl-C or kill still keeps the runs it finished.)

(a record is at most about 10 KB: 8 evaluation lengths, its curve and fit checks every 100
steps; about 11 MB for all 1,092 runs.)

What runs: every registered encoding at its defaults, plus ASEntmax (NAPE positions under
entmax15 attention, `--model.normalization entmax15`, Vasylenko et al. 2025), on every 1-D task
with an exact match, trained on 1-16 symbols and evaluated at 16-128 (1x-8x), 3 seeds. Two
choices per encoding: M-RoPE reads 3-D positions, so it gets its own sampler (`mrope`: text at
its index on all three axes, Qwen2-VL's rule); HoPE keeps the rotation pairs whose wavelength
fits in 16 positions (`hope(train_length=16)`, as experiments/recent.py runs it: the training
length in symbols for every task, so one row covers all). Left out, and where they
are studied instead: `rope_nd` needs 2-D positions, and the grid and video tasks n-D ones
(experiments/grid2d.py, experiments/mrope_video.py); byte_lm has no exact match to fit
(experiments/lm.py).

Scales: `cpu` is the fit recipe (FIT_MODEL and FIT_TRAIN, pe_research/sweeps/experiments.py: 4
layers, d_model 64, 4 heads, lr 3e-3 after 200 warm-up steps, at most 2,000 steps, until exact
match >= 0.95 at 16, checked every 100 steps, 4 length buckets); `gpu` the standard accelerator
model (4 layers, d_model 256, 8 heads, lr 5e-4, at most 5,000 steps, batch 128), also until fit,
same lengths.

Size: 13 tasks x 28 encodings x 3 seeds = 1,092 runs in 364 trainings of 3 packed seeds. Cost,
measured row by row: 105 min (copy), 100 (reverse), 35 (offset, where 10 of 28 encodings fit at the
first check), about 180 (duplicate, whose answer doubles the sequence), about 90 (count_copy), about
90 (sort), 25 (flip_flop, every encoding fit by step 533), 41 (local_count), about 180
(selective_copy, 3n + 1 tokens with its noise and answer), about 60 (counting), about 190 (mqar,
where most packs ran to the step cap) and about 160 (addition, every pack to the cap) on 2 workers,
part of the time beside other sweeps, and about 5 h for multiplication (every pack runs to the cap:
13-19 min each with two running for the first 13 encodings, 16-26 for most of the 2024-25 ones, 38
for CoPE, about 45 for PaTH and DAPE, 15 for NAPE (from a step-200 checkpoint) and 50 for ASEntmax
(32 training, 18 evaluating under entmax15); below), so about 26 hours for the 13 rows. The sweep's
own estimate (sweeps/cost.py) is 4.6e15 matmul FLOPs to the step caps (728,000 steps): about 40
hours on the 2 cores at the 25% of a 125 GFLOP/s fp32 peak that the main job's step reaches, perhaps
half that when runs stop at fit as the main job's do (100-1,900 steps), and more for the costlier
encodings (PaTH, DAPE, LieRE, ComRoPE). Run it by shards over several sessions or machines; `--scale
gpu` is 3.2e17 FLOPs (the estimate prints at least 0.55 h on one H200, from the rates measured
there).

What the sweep writes besides the standard tables: summary.md ends with the leaderboard (an
at-a-glance matrix, the best encoding per task at 2x and 8x beside ASEntmax's published claim,
and the full table of fit counts, exact match and token accuracy at 1x, 2x, 4x, 8x), and
leaderboard_exact_match.png/.pdf draws the matrix as heatmaps at 2x and 8x; see
pe_research/sweeps/leaderboard.py for how scores count unfit seeds (as 0).

Result: all 13 rows (1,092 runs, 787 fit), on the 2-core CPU machine. Their tables (the leaderboard
at the end) are docs/leaderboard/summary.md, the heatmaps
docs/leaderboard/leaderboard_exact_match.png, the records docs/leaderboard/runs (rebuilt with
`pe-research sweep leaderboard --tables-only --tasks copy reverse offset duplicate count_copy sort
addition multiplication flip_flop local_count selective_copy counting mqar --out DIR` on a copy of
them). A score is an exact match (at 2x, 4x or 8x the training length) with unfit seeds as 0.

Copy (84 runs, 80 fit). 81 runs ran at commit ed5da60 (2026-12-04/05: 54 runs in 47 min, then 27
in 42 min, 2 workers, fp32 peak 247 GFLOP/s), before packed seeds stopped one by one at their own
fit: their seeds trained on until all three were fit (44 of the 81 trained past their first fit,
as the summary says). PaTH's 3 ran 2026-12-05 at commit 3f3371d (1 worker beside another sweep, 16
min; fit at steps 1,400-1,600), after its triangular solve, which deadlocked XLA's CPU runtime from
the second step on, became products (pe_research/encodings/path.py); the summary keeps the code
versions apart. Score at 2x (32 symbols): NAPE under entmax15 (ASEntmax) .76, NAPE .73, Kerple
.70, ALiBi .68, PaTH .42, FIRE .31, forgetting gate .30, DAPE .13, CoPE .11, T5 .07, HoPE .02,
every other encoding 0 (NoPE, integer, normalized integer and temperature fit 2 of 3). At 8x (128)
only NAPE scores (.01); token accuracy at 8x leads with ASEntmax .94, NAPE .89, Kerple .72, ALiBi
.62, FIRE .42 (PaTH .24), the rotary family at .06-.09. Every rotary encoding's token accuracy at
96 (6x, not a column of the table) stands out at .15-.54: one of a row of peaks 19.87 symbols
apart, the wavelength of RoPE's second frequency (scripts/answer_positions.py,
docs/leaderboard/copy_rotary_length_scan.png).

Reverse (84 runs, 79 fit: NoPE, normalized integer, temperature, CoPE and PoPE 2 of 3). Every seed
stopped at its own first fit. 9 runs at commit 4e926e4 and 75 at e7c86f9 (their package code differs
only in summary.md's wording), 2026-12-05: about 100 min on 2 workers over two sessions, part of it
beside other sweeps; PaTH's 3 seeds took 15 min, the other packs logged 6-13 min. PaTH is the one
encoding that reverses beyond the training length: score .62 at 2x (fit at steps 800-1,500), .01 at
4x, token accuracy .98 / .88 / .58 at 2x / 4x / 8x. Every other encoding scores .00-.01 at 2x,
ASEntmax included; their token accuracy at 2x is at most .76 (HoPE .76, Kerple .74, CoPE .73, NAPE
.73, ALiBi .71, ASEntmax .64, RoPE .43, sin/cos .13), at 8x at most .20 (CoPE .20, HoPE and
Transformer-XL .19). So the ALiBi family, which copies to 2x, does not reverse: the rows disagree,
which is what the table is for. M-RoPE with text positions (index on all three axes) matches RoPE to
the digit on every row, as it must.

Offset (84 runs, 69 fit; 2026-12-05, code of e7c86f9, 35 min on 2 workers, the first 10 min beside
the reverse row's last runs). Each answer symbol is the one 3 positions back (n-back), so relative
encodings should carry it to any length. NoPE, integer, normalized integer, temperature (NoPE with
Llama 4's query scale) and ALiBi fit no seed (ALiBi .88 exact match at 16, as in
experiments/context_extension.py; the other four .08-.09). At 2x LieRE, ComRoPE and Transformer-XL
score 1.00, CoPE .99, xPos .98, then DAPE .91, forgetting gate .90, NAPE and Kerple .87, ASEntmax
.85, RoPE .83; sin/cos, binary and learned fit every seed and score 0. At 8x Transformer-XL alone
holds the rule (.99); DAPE and the forgetting gate .67, ASEntmax .59, NAPE .52, Kerple .46, xPos
.33, while the learned rotations fall to .02-.04 and RoPE to 0 (token accuracy .81). RoPE's numbers
are those of experiments/context_extension.py's trained RoPE to the digit (token accuracy .99 / .93
/ .81 at 2x / 4x / 8x), a second check of the recipe.

Duplicate (84 runs, 59 fit; 2026-12-05, 27 runs at commit e7c86f9 and 57 at 80da182, whose training
code is the same; about 3 h on 2 workers over two sessions, the slowest row: the answer repeats the
input, so 8x is 384 tokens, and many encodings fit only after 1,000 steps). NoPE, integer,
normalized integer, temperature, HoPE and PoPE fit no seed (exact match at 16 .74-.91); learned, T5,
PaTH, FIRE and Transformer-XL fit 2 of 3, Kerple 1. At 2x ASEntmax .75, NAPE .74, ALiBi .52,
forgetting gate .46, CoPE .43, PaTH .30, Kerple .27, FIRE .25, DAPE .17, T5 .02; every rotary,
absolute and learned-rotation encoding fits 3/3 and scores 0. At 8x ASEntmax and Kerple .05
(Kerple's one fitted seed .16), NAPE .01, the rest 0; token accuracy at 8x ASEntmax .97, NAPE .96,
ALiBi .86. So the ALiBi family and ASEntmax lead, as on copy.

Count_copy (84 runs, all fit; one symbol n times, then END; 2026-12-05, 30 runs at commit 80da182
and 54 at 03242b3, whose training code is the same; about 1.5 h on 2 workers over two sessions). The
answer hangs on a count, not on where a symbol sits, and NoPE and its kin lead, as Kazemnejad et al.
2023 found (NoPE .99 exact match over lengths 21-40 after training on at most 20, with their model:
a different split from ours, 1-16 and scored at 32; experiments/mcgill.py runs theirs): at 2x NoPE
.80, PaTH .73, HoPE .71, temperature (NoPE with a query scale) .68, integer .60, normalized integer
.58, FIRE .48, binary .22, sin/cos .18, RoPE and M-RoPE .11 (the same to the digit), Kerple .11,
CoPE .10, ASEntmax .09; ALiBi, NAPE, LieRE, ComRoPE, FoPE and Transformer-XL 0. At 8x HoPE .18,
temperature .11, NoPE .09, CoPE and integer .08; token accuracy at 8x .97-.98 for NoPE, HoPE,
temperature, RoPE, sin/cos and PaTH, ALiBi .50. So the encodings that lead copy and duplicate
(ALiBi, NAPE, ASEntmax) trail here, and NoPE, which fits no seed of duplicate or offset, leads.

Sort (84 runs, all fit; n symbols, SEP, the same symbols in ascending order, the ASEntmax suite's
task; 2026-12-05, code of 03242b3, about 1.5 h on 2 workers; the last packs were PaTH, 10 min for 3
seeds, and ASEntmax, fit at steps 1,100-1,200). Here FIRE and the NoPE-like and integer-position
encodings lead: at 2x FIRE and normalized integer .75, temperature and integer .66, HoPE .60, NoPE
.58, CoPE .38, forgetting gate .30, T5 .28, PaTH .24, learned .23, ASEntmax .19; Kerple .04, DAPE
.02, and ALiBi, NAPE and every rotary, xPos, sin/cos and learned-rotation encoding 0. At 4x none
scores above .01 and at 8x none above 0; token accuracy at 8x FIRE .91, normalized integer,
temperature and NoPE .90, ASEntmax .59, RoPE .30, NAPE .25. ASEntmax's paper reports sort
extrapolating far beyond its training length, on its own data (32 symbols, training lengths 32-64:
deep-spin/asentmax, scripts/generate_data.py) and model; here, with 16 symbols, lengths 1-16 and our
fit recipe, it is twelfth at 2x. The table does not reproduce that paper.

Flip_flop (84 runs, all fit; Liu et al. 2023's FFL(0.8): n instructions w / r / i, each followed by
a bit, every bit after a read scored, n = 1-16; 2026-12-05, code of 7cde07f, 25 min on 2 workers,
every encoding fit at steps 100-533). In distribution every encoding scores .96-1.00, so only length
separates them. At 2x the forgetting gate .98, PaTH .95, ALiBi .94, NAPE .93, DAPE .92, ASEntmax
.86, PoPE and Transformer-XL .85, Kerple .84, T5 .80, FIRE .79; NoPE .75, RoPE .62, FoPE and sin/cos
.57 last. At 8x the forgetting gate holds .88, then ALiBi .69, DAPE .66, NAPE .48, PaTH .38, Kerple
.30, ASEntmax .27, FIRE .21, RoPE and its variants .02-.03, PoPE .07; token accuracy at 8x:
forgetting .99, ALiBi .97, DAPE .96, RoPE .66. The forgetting gate leads at every length, ALiBi and
DAPE follow at 8x. ASEntmax's flip-flop is another variant (deep-spin/asentmax,
scripts/generate_data.py, FlipFlop: writes with probability 0.1, otherwise ignores, a single read at
the end and one scored bit; its data folder 10M_wprob-0_1), so its 1000x claim is not tested here
either. Liu et al.'s own tests keep their training length and change the density of ignores
(FFL(0.98), FFL(0.1); tasks.FlipFlop); the lengths here are the leaderboard's, 1-16 scored at up to
8x, so no number here is theirs.

Local count (84 runs, 83 fit: temperature 2 of 3; the ASEntmax suite's task: a stream of runs of 2-8
copies of a symbol between a start and an end token, each stream token labelled with the copies of
its symbol before it in its run; 2026-12-05/06, code of 067bd69, 41 min on 2 workers, fit at steps
300-2,000). A first run of this row had no start token and is not kept (tasks.LocalCount says what
it showed). In distribution every encoding scores .95-.98. At 2x NAPE .89, ASEntmax .84,
Transformer-XL .83, PaTH .70, the forgetting gate .56, DAPE .55, ALiBi .35, Kerple .34, CoPE .32,
FIRE .26, T5 .22, HoPE .19; NoPE and the absolute encodings .00-.12, RoPE and the rest of the rotary
family .00-.04. At 8x NAPE .29, Transformer-XL .12, ASEntmax .11, every other encoding 0; token
accuracy at 8x NAPE .97, Transformer-XL .95, ASEntmax .93, PaTH .79, ALiBi .72, DAPE .69, the rotary
family .39-.47, learned .33. ASEntmax's own data differ (deep-spin/asentmax, README and
scripts/generate_data.py, LocalCount): 16 symbols as here, but runs of 2-48 and a whole number of
runs (the nominal length // 25, 25 being the mean run) at nominal training lengths 64-128, where a
sequence here holds exactly n = 1-16 stream tokens in runs of 2-8, the last one cut short; no number
here is theirs.

Selective copy (84 runs, 71 fit: NoPE, normalized integer and temperature fit no seed, integer 1 of
3, HoPE and ASEntmax 2 of 3; n symbols scattered among n noise tokens, SEP, the n symbols, Gu and
Dao 2023's task in the form of the CoPE paper; 2026-12-05/06, 12 runs at commit 7cde07f, 57 at
e435065 and 15 at 0933ab5 (DAPE's and PaTH's resumed from checkpoints of e435065), whose package
code differs only in docstrings and local_count's markers; about 3 h on 2 workers over three
sessions, 8x being 385 tokens; fit at steps 1,100-2,000). In distribution the fitted encodings score
.95-.98, the unfit ones .91-.92. At 2x NAPE .69, Kerple .66, ALiBi .52, FIRE .49, ASEntmax .28, the
forgetting gate .26, DAPE .22, PaTH .13, CoPE .02, T5 .01, every other encoding 0; at 4x NAPE .08
and no other above .02; at 8x none above 0. Token accuracy at 8x NAPE .87, Kerple .71, ALiBi .57,
forgetting .54, FIRE .49, Transformer-XL .28, CoPE .25, PaTH .20, RoPE and every rotary variant .07.
The CoPE paper's protocol differs (Golovneva et al. 2024, arXiv 2405.18719; its splits are named in
tasks.SelectiveCopy): it trains on 128 symbols among 128 noise tokens and tests the same 128 symbols
among 64 (dense) or 256 (sparse) noise tokens, so its out-of-distribution axis is the density at a
fixed count, where here the count grows from 1-16 to 128 at the training density (noise_percent
100). Its claim, that CoPE solves the task where token positions fail, is about that axis; here CoPE
fits in distribution as 21 other encodings do and scores .02 at 2x. Gu and Dao's original (Mamba)
hides 16 symbols in 4,096 tokens. No number here is theirs.

Counting (84 runs, 83 fit: ASEntmax 2 of 3; a query symbol, n symbols over the task's alphabet of 4,
SEP, the count of the query among them in 3 digits; 2026-12-06, code of 0933ab5, about 1 h on 2
workers and a third beside them, fit at steps 1,000-1,900). In distribution the fitted encodings
score .96-.99. No encoding counts past the training length: at 2x integer .20, the forgetting gate
and temperature .13, FIRE and DAPE .11, NoPE .10, HoPE .09, normalized integer .08, ASEntmax .06,
ALiBi .05, RoPE .02, CoPE 0; at 4x HoPE .01 and every other 0, at 8x all 0. Token accuracy is
.62-.70 at 2x and .36-.39 at 4x and 8x for every encoding: the leading zeros and little more, since
the counts (about n / 4) leave the range seen in training. This is not the CoPE paper's counting (a
program trace of `v = 0 ;`, `pass;` and `v ++;` statements answered by a variable's value:
facebookresearch/RAM, projects/cope; tasks.Counting names the differences), so its claim that CoPE
counts where token positions fail is not tested here; no number here is theirs.

MQAR (84 runs, 11 fit; 2026-12-05/06, 6 runs (NoPE, integer) at commit 7cde07f and 78 at 7d449d9,
whose package code differs only in docstrings; 9-33 min per pack of 3 seeds on 2 workers, about 3 h
for the row over three sessions). Fit is a seed lottery at the 2,000-step cap: the seeds that fit do
so at steps 400-1,700, and the others end below the .95 threshold at 16, most at 0. Fit: DAPE,
Kerple, NAPE and PaTH 2 of 3, Transformer-XL, T5 and mixture(RoPE, NoPE) 1 of 3, the other 21
encodings none (NoPE, integer, normalized integer, binary, sin/cos, learned, RoPE, xPos, M-RoPE,
HoPE, RNoPE, FoPE, LieRE, ComRoPE, PoPE, ALiBi, FIRE, CoPE, the forgetting gate, temperature and
ASEntmax; two of ALiBi's seeds end at token accuracy .99 at 16 but exact match .84 and .91, and
ASEntmax's three seeds end at exact match .49, 0 and 0 at 16, where NAPE under softmax fits 2 of 3).
Exact match at 2x (an unfit seed counts 0): DAPE .59, Kerple .54, NAPE .51, PaTH .44, Transformer-XL
.22, mixture .03, T5 .01, every other 0; at 4x NAPE .29, DAPE and Kerple .27; at 8x NAPE .07, Kerple
.02, every other 0. The fitted seeds' token accuracy at 8x: NAPE and Kerple .97, DAPE .93,
Transformer-XL .76, PaTH .39, T5 .32, mixture .28: the distance-decaying biases' fitted seeds keep
recalling at 128 pairs, where one miss among 128 recalls costs the sequence's exact match. The
recipe learns the recall later where it fails at the cap: RoPE alone (seed 0, the same recipe with a
longer cosine: `pe-research train mqar rope --model.num-layers 4 --train.train-length 16
--train.learning-rate 3e-3 --train.warmup-steps 200 --train.length-buckets 4 --train.stop-when-fit
--train.steps 12000`; run on 2026-12-06 at 7d449d9, the row's code; those runs are not kept) ends a
6,000-step run at exact match .44 at 16 (training token accuracy .37 at step 2,000, .76 at 3,500)
and a 12,000-step run at .90 (.92 at best), still short of fit; NoPE ends the 12,000 steps at 0
(token accuracy .73). So this row measures which encodings learn MQAR within 2,000 steps at this
scale as much as which extrapolate it. The task is not Zoology's MQAR (Arora et al. 2023):
tasks.MQAR names the differences (keys and values from the two halves of a vocabulary of 8,192,
distinct values, fixed sequence lengths, queries at power-law gaps among filler there), so no number
here is theirs.

Addition (84 runs, none fit; the task's defaults, operands of 1-16 digits least significant first;
2026-12-05/06, 9 runs at commit 03242b3 and 75 at 7d449d9, whose code differs only in plotting and
other tasks' files; 9-27 min per pack of 3 seeds run to the 2,000-step cap, about 160 min on 2
workers). No seed fits, and none learns the sum even at the training length: training loss 1.61-2.08
over the answer digits at the cap (ln 10 = 2.30 for a uniform digit), token accuracy on the last
training batch .17-.36 (NoPE, integer, normalized integer, binary and the Llama 4 temperature
.17-.20; the rotary family, Transformer-XL, the forgetting gate, T5, Kerple, DAPE, PaTH, NAPE and
ASEntmax .25-.36 on most seeds), token accuracy at 16 digits .14-.23 (mean of 3 seeds) and about .10
(chance) from 4x on. experiments/addition.py, in Cho et al.'s format (operands most significant
digit first, the sum reversed, then END), with a wider 1-layer model, longer training and 1-8
digits, fits no seed with token positions either (RoPE, FIRE, ALiBi, NoPE) and only with Cho et
al.'s coupled positions (learned and RoPE, 2 of 3 each). The table keeps token positions and the fit
recipe on every task, so its arithmetic rows measure whether an encoding learns 16-digit addition
and multiplication at this scale at all; run to the cap, they cost the most, so they come last.
Multiplication (84 runs, none fit; 2026-12-06/07, 36 runs at 7d449d9 and 48 at 00d0548, whose
training code is the same (it changed only the sweep's signal handling); records in
docs/leaderboard/runs/multiplication): the same picture as addition, no seed fits and none learns
the product even at the training length: training loss 1.98-2.16 over the product's digits at the
cap, token accuracy on the last training batch .14-.24, at 16 digits .12-.17 (per seed; .13-.16 the
mean of 3) and .10-.13 from 2x on, exact match 0 at every length. NAPE and ASEntmax, last to run,
fall inside the same ranges (both .14 at 16 digits, the mean of 3; ASEntmax's seed 2 ends at the
highest loss, 2.16).
"""

import dataclasses

from pe_research import encodings, positions, tasks
from pe_research.config import ModelConfig, RunConfig
from pe_research.sweeps import leaderboard
from pe_research.sweeps.experiments import FIT_MODEL, FIT_TRAIN, GPU_MODEL, gpu_train

TASKS = [
    "copy", "reverse", "offset", "duplicate", "count_copy", "sort", "addition", "multiplication",
    "flip_flop", "selective_copy", "counting", "mqar", "local_count",
]  # fmt: skip
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
    return (
        "## Leaderboard: which encoding generalizes on which task\n\n"
        + leaderboard.at_a_glance(rows)
        + "\n### Best encoding per task\n\n"
        + leaderboard.best_per_task(rows, CLAIMS)
        + "\n### Every encoding on every task\n\n"
        + leaderboard.full_table(rows)
    )


def figures(rows: list[dict]) -> dict:
    """The leaderboard's heatmaps (exact match score at 2x and 8x)."""
    return {"leaderboard_exact_match": leaderboard.leaderboard_figure(rows)}
