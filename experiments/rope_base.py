"""RoPE base: how the frequency base (the longest wavelength) affects length generalization.

Command (from the repository root):

    pe-research sweep rope_base
    pe-research sweep rope_base --scale gpu

base in {100, 1e3, 1e4, 1e5, 1e6} on copy, reverse and offset, trained on 1-16 symbols and
evaluated at 1x-8x. A small base makes every frequency turn many times within the training
length (every angle has been seen); a large base leaves low frequencies whose angles beyond the
training length are new.

Runtime and result: RESULT_PLACEHOLDER
"""

from pe_research import encodings, tasks
from pe_research.config import ModelConfig, RunConfig, TrainConfig

BASES = (100.0, 1e3, 1e4, 1e5, 1e6)
TASKS = ["copy", "reverse", "offset"]
SCALES = {
    "cpu": (ModelConfig(), TrainConfig(steps=500, train_length=16)),
    "gpu": (ModelConfig(num_layers=4, d_model=256, num_heads=8, mlp_dim=1024),
            TrainConfig(steps=5000, batch_size=128, train_length=32, learning_rate=5e-4)),
}  # fmt: skip


def runs(scale: str = "cpu") -> list[RunConfig]:
    model, train = SCALES[scale]
    return [
        RunConfig(task=tasks.get(task), encoding=encodings.get("rope", base=base), model=model,
                  train=train)
        for task in TASKS
        for base in BASES
    ]  # fmt: skip
