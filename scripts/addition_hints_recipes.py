"""A recipe probe for addition_hints: its recipe (FIRE shared + randomized positions) and RoPE,
seed 0, at a 4,000-step cap (the cpu scale's until 2026-12-03), under the betas (0.9, 0.95).

    pe-research sweep scripts/addition_hints_recipes.py   # -> runs/addition_hints_recipes/

Under the fit recipe (lr 3e-3, AdamW b2 0.999) no run of addition_hints learns 1-8 digits by
4,000 steps (0 of 15); in Cho et al.'s block, which shares this one's RMSNorm before and after
each sublayer, lr 1e-3 with b2 0.95 was what made addition learn (scripts/addition_recipes.py).

Result (2026-12-03, commit 9a6fd62 + this script, 45 min with 1 worker beside the addition
sweep; exact match / token accuracy at 8, 10, 12, 16 and 20 digits):

    run                           8            10           12           16           20
    rope, lr 1e-3                 1.0 / 1.0    .00 / .24    .00 / .21    .00 / .16    .00 / .14
    fire + randomized, lr 1e-3    .66 / .96    .42 / .93    .22 / .89    .02 / .80    .00 / .75
    rope, lr 3e-4                 .00 / .41    .00 / .22    .00 / .19    .00 / .15    .00 / .14
    fire + randomized, lr 3e-4    .04 / .71    .01 / .60    .00 / .50    .00 / .32    .00 / .23

At lr 1e-3 with b2 0.95 both learn where the fit recipe left every run at exact match 0: RoPE
fits by 1,700 steps and adds nothing longer than it trained on; FIRE + randomized is still
climbing at the cap (.53 at 3,400, .66 at 4,000) and already adds 10 and 12 digits. lr 3e-4, the
paper's rate, is too slow for 4,000 steps of 64.

The runs of LONG (FIRE + randomized, 3 seeds, the first recipe with an 8,000-step cap) are the
experiment's own runs of its recipe, since the cpu scale took this recipe (CPU_TRAIN). Run on
2026-12-03 (88 min, 1 worker): seeds 0 and 2 fit at steps 6,700 and 5,000 (exact match .96 / .98
at 8 digits, .51 / .25 at 10, .03 / .00 at 16); seed 1 stayed at exact match 0. An earlier
attempt at the same configs (stopped at step 4,500, its runs since lost) had all three seeds at
.51-.82 there, seed 1 included: which seed learns moved with the host, as in the main job (its
docstring).
"""

import dataclasses
from pathlib import Path

from pe_research.sweeps.experiments import load_experiment

hints = load_experiment(
    str(Path(__file__).resolve().parents[1] / "experiments" / "addition_hints.py")
)

METRIC = "exact_match"
RECIPES = {
    "lr 1e-3, b2 0.95": {"learning_rate": 1e-3, "adam_b2": 0.95, "steps": 4000},
    "lr 3e-4 (the paper's), b2 0.95": {"learning_rate": 3e-4, "adam_b2": 0.95, "steps": 4000},
}
VARIANTS = ("fire", "rope")


def runs():
    out = []
    for cfg in hints.runs():
        if cfg.encoding.name not in VARIANTS:
            continue
        if cfg.encoding.name == "fire" and cfg.positions.name != "randomized":
            continue
        if cfg.seed == 0:
            out += [
                dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, **changes))
                for changes in RECIPES.values()
            ]
        if cfg.positions.name == "randomized":
            out.append(cfg)  # LONG: the experiment's own runs (8,000 steps), 3 seeds
    return out
