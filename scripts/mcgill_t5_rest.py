"""experiments/mcgill.py's cpu runs with T5_REST (dropout 0.1 at T5's sites and the tied output
head, as the paper's decoder), the rerun the cpu scale waits for before it adopts T5_REST.

    pe-research sweep scripts/mcgill_t5_rest.py --workers 2      # -> runs/mcgill_t5_rest/

Every other number is the cpu scale's. count_copy runs first (where T5 is furthest from the
paper), then copy, then reverse; a sweep stopped part way resumes where it stopped. Once all 63
runs have finished, the cpu scale takes T5_REST and its runs are these (same configurations, so
the same run directories: move them into runs/mcgill, or pass this folder to the report).
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
