"""p-RoPE and length generalization: Barbero et al. (2025), "Round and Round We Go! What makes
Rotary Positional Encodings useful?", keep the highest fraction p of RoPE's frequencies.

Command (from the repository root):

    pe-research sweep prope
    pe-research sweep prope --scale gpu

p in {0, 0.25, 0.5, 0.75, 1} (0 is NoPE, 1 is RoPE) on copy, reverse and offset, trained on
1-16 symbols and evaluated at 1x-8x. Barbero et al. measured perplexity at the training context,
not extrapolation; this experiment asks whether dropping the low frequencies helps beyond it.

Runtime and result: RESULT_PLACEHOLDER
"""

from pe_research import encodings, tasks
from pe_research.config import ModelConfig, RunConfig, TrainConfig

PS = (0.0, 0.25, 0.5, 0.75, 1.0)
TASKS = ["copy", "reverse", "offset"]
SCALES = {
    "cpu": (ModelConfig(), TrainConfig(steps=500, train_length=16)),
    "gpu": (ModelConfig(num_layers=4, d_model=256, num_heads=8, mlp_dim=1024),
            TrainConfig(steps=5000, batch_size=128, train_length=32, learning_rate=5e-4)),
}  # fmt: skip


def runs(scale: str = "cpu") -> list[RunConfig]:
    model, train = SCALES[scale]
    return [
        RunConfig(task=tasks.get(task), encoding=encodings.get("rope", p=p), model=model,
                  train=train)
        for task in TASKS
        for p in PS
    ]  # fmt: skip
