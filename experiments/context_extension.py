"""Can a RoPE model trained at length L read 8x L with a frequency scaling applied at evaluation?

A RoPE model trained on copy, reverse and offset is evaluated at 1x-8x L with each `rope_scaling`
of Llama-family configs (linear position interpolation, ntk, dynamic NTK, YaRN, llama3; factor
8) applied at evaluation only, beside ALiBi and NoPE trained alike. The scalings share RoPE's
training (train.train_group); a scaling is judged like a trained run, fit only if the model still
fits at L with it applied. The cpu scale is the fit recipe (FIT_MODEL, FIT_TRAIN), 3 seeds.

    pe-research sweep context_extension --workers 2   # cpu: 72 runs in 9 trainings
    pe-research sweep context_extension --scale gpu

Cost: cpu, about 35 min on 2 CPU cores.
Results: docs/results/context_extension/summary.md.
Why a scaling must fit at L before it is compared: docs/notes/fit-gating.md.
"""

import dataclasses

from pe_research import encodings, tasks
from pe_research.config import RunConfig
from pe_research.sweeps.experiments import FIT_MODEL, FIT_TRAIN, STANDARD_SCALES

TASKS = ["copy", "reverse", "offset"]
SCALES = {
    # The fit recipe (FIT_MODEL, FIT_TRAIN): 4 layers, until fit, at most 2,000 steps.
    "cpu": (FIT_MODEL, FIT_TRAIN),
    "gpu": STANDARD_SCALES["gpu"],
}
SEEDS = (0, 1, 2)


def scalings(train_width: int, factor: float = 8.0) -> list[dict]:
    """The scalings, with the original context set to the training width in tokens."""
    orig = {"original_max_position_embeddings": train_width}
    return [
        {"rope_type": "linear", "factor": factor},
        {"rope_type": "ntk", "factor": factor},
        {"rope_type": "dynamic", "factor": factor, **orig},
        {"rope_type": "yarn", "factor": factor, **orig},
        {"rope_type": "llama3", "factor": factor, "low_freq_factor": 1.0,
         "high_freq_factor": 4.0, **orig},
    ]  # fmt: skip


def runs(scale: str = "cpu") -> list[RunConfig]:
    model, train = SCALES[scale]
    out = []
    for name in TASKS:
        task = tasks.get(name)
        rope = RunConfig(task=task, encoding=encodings.get("rope"), model=model, train=train)
        width = task.seq_len(train.train_length, model.causal)
        out.append(rope)
        out += [
            dataclasses.replace(rope, eval_encoding=encodings.get("rope", scaling=s))
            for s in scalings(width)
        ]
        out += [dataclasses.replace(rope, encoding=encodings.get(e)) for e in ("alibi", "nope")]
    return [dataclasses.replace(cfg, seed=seed) for cfg in out for seed in SEEDS]
