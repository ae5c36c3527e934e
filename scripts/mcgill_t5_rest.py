"""experiments/mcgill.py's cpu runs with T5_REST (dropout 0.1 at T5's sites and the tied output
head, as the paper's decoder), the rerun the cpu scale waits for before it adopts T5_REST.

    pe-research sweep scripts/mcgill_t5_rest.py --workers 2      # -> runs/mcgill_t5_rest/

Every other number is the cpu scale's. count_copy runs first (where T5 is furthest from the
paper), then copy, then reverse; a sweep stopped part way resumes where it stopped.

Result (count_copy only, then stopped): the paper's T5 fit 3 of 3 seeds (at 1,633 +- 115 steps;
its runs were made on 2026-12-03 by the code of commit ed47fdc, before this script existed, into
the same folder), NoPE and ALiBi (2026-12-04, commit 79f1e16) 0 of 3 each by the 2,000-step cap,
their fit
checks swinging by up to .5 between checks (NoPE seed 1: .98 at step 1,800, .52 at 1,900): at
the cpu recipe's lr 3e-3 and cap, dropout keeps the runs from fitting, so the cpu scale does not
take it (experiments/mcgill.py, "The tied head and dropout"). The rest was not run.
"""

import dataclasses
from pathlib import Path

from pe_research.sweeps.experiments import load_experiment

mcgill = load_experiment(str(Path(__file__).resolve().parents[1] / "experiments" / "mcgill.py"))
METRIC = "exact_match"
ORDER = ("count_copy", "copy", "reverse")


def runs(scale: str = "cpu"):
    configs = [
        dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, **mcgill.T5_REST))
        for cfg in mcgill.runs(scale)
    ]
    return sorted(configs, key=lambda c: ORDER.index(c.task.name))
