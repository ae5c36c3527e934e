"""Do CoPE's counted positions beat token positions on flip-flop, selective copy and counting?

Follows Golovneva et al. 2024, "Contextual Position Encoding" (https://arxiv.org/abs/2405.18719):
CoPE, RoPE, NoPE and ALiBi on flip_flop (Liu et al. 2023's FFL(0.8)), selective_copy and a
counting task of ours (not the paper's program trace: tasks.Counting names the differences);
decoder form, exact match over the scored tokens, trained until fit, 3 seeds. The paper's
out-of-distribution splits change the noise density at a fixed length; this sweep changes the
length at the training density, so it tests the direction of the claim, not its numbers.

    pe-research sweep contextual_tasks --workers 2   # cpu: 2 layers, 1-8 symbols, to 4x
    pe-research sweep contextual_tasks --scale gpu   # 4 layers, d_model 256, 1-32, to 8x

Cost: cpu, 36 runs in 12 trainings, about 20-35 min on 2 CPU cores.
Results: docs/results/contextual_tasks/summary.md.
"""

import dataclasses

from pe_research import encodings, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig
from pe_research.sweeps.experiments import FIT_TRAIN, GPU_MODEL, gpu_train

ENCODINGS = ["cope", "rope", "nope", "alibi"]
TASKS = ["flip_flop", "selective_copy", "counting"]
SEEDS = (0, 1, 2)
SCALES = {
    "cpu": (
        ModelConfig(num_layers=2),
        dataclasses.replace(FIT_TRAIN, train_length=8, steps=1000, warmup_steps=100),
        (8, 16, 32),
    ),
    "gpu": (
        GPU_MODEL,
        gpu_train(length_buckets=4, stop_when_fit=True, fit_check_every=250, log_every=250),
        (32, 64, 128, 256),
    ),
}


def runs(scale: str = "cpu") -> list[RunConfig]:
    model, train, lengths = SCALES[scale]
    return [
        RunConfig(
            task=tasks.get(task),
            encoding=encodings.get(encoding),
            model=model,
            train=train,
            eval=EvalConfig(lengths=lengths),
            seed=seed,
        )
        for task in TASKS
        for encoding in ENCODINGS
        for seed in SEEDS
    ]
