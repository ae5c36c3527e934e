"""How does RoPE's frequency base (its longest wavelength) affect length generalization?

base in {100, 1e3, 1e4, 1e5, 1e6} on copy, reverse and offset, trained on 1-16 symbols until fit
(the fit recipe, FIT_MODEL and FIT_TRAIN) and evaluated at 1x-8x, 3 seeds. A small base turns
every frequency many times within the training length; a large one leaves slow frequencies whose
angles beyond it are new. The base is a packable number: every base and seed of a task trains as
one program.

    pe-research sweep rope_base
    pe-research sweep rope_base --scale gpu

Cost: cpu, 45 runs in 3 trainings, about 40 min on 2 CPU cores.
Results: docs/results/rope_base/summary.md. What the bases show: docs/notes/rotary-frequencies.md.
"""

from pe_research import encodings, tasks
from pe_research.config import RunConfig
from pe_research.sweeps.experiments import FIT_MODEL, FIT_TRAIN, STANDARD_SCALES

BASES = (100.0, 1e3, 1e4, 1e5, 1e6)
TASKS = ["copy", "reverse", "offset"]
SCALES = {
    # The fit recipe (FIT_MODEL, FIT_TRAIN): 4 layers, until fit, at most 2,000 steps.
    "cpu": (FIT_MODEL, FIT_TRAIN),
    "gpu": STANDARD_SCALES["gpu"],
}
SEEDS = (0, 1, 2)


def runs(scale: str = "cpu") -> list[RunConfig]:
    model, train = SCALES[scale]
    return [
        RunConfig(task=tasks.get(task), encoding=encodings.get("rope", base=base), model=model,
                  train=train, seed=seed)
        for task in TASKS
        for base in BASES
        for seed in SEEDS
    ]  # fmt: skip
