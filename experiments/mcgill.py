"""McGill reproduction: Kazemnejad et al. (2023), "The Impact of Positional Encoding on Length
Generalization in Transformers", decoder-only, sequence exact match.

Command (from the repository root):

    pe-research sweep mcgill                 # CPU size, below
    pe-research sweep mcgill --scale gpu     # closer to the paper's sizes, for an accelerator

Protocol as in the paper: train on lengths <= 20, test on 21-40, 3 seeds, NoPE / T5 bias /
ALiBi / RoPE / RoPE on 25% of each head / absolute sinusoidal, on copy, count_copy (one token
repeated n times) and reverse. Our CPU model is far smaller than theirs (2 layers, d_model 64
instead of a 12-layer T5-base-sized decoder), trained for 500 steps.

Runtime and result: RESULT_PLACEHOLDER
"""

from pe_research import encodings, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig

ENCODINGS = [
    encodings.get("nope"),
    encodings.get("t5"),
    encodings.get("alibi"),
    encodings.get("rope"),
    encodings.get("rope", fraction=0.25),
    encodings.get("sinusoidal"),
]
TASKS = ["copy", "count_copy", "reverse"]
SEEDS = (0, 1, 2)
SCALES = {
    "cpu": (ModelConfig(), TrainConfig(steps=500, batch_size=32, train_length=20)),
    "gpu": (
        ModelConfig(num_layers=6, d_model=256, num_heads=8, mlp_dim=1024),
        TrainConfig(
            steps=5000, batch_size=128, train_length=20, learning_rate=5e-4, warmup_steps=500
        ),
    ),
}


def runs(scale: str = "cpu") -> list[RunConfig]:
    model, train = SCALES[scale]
    return [
        RunConfig(
            task=tasks.get(task),
            encoding=encoding,
            model=model,
            train=train,
            eval=EvalConfig(lengths=(20, 24, 28, 32, 36, 40)),
            seed=seed,
        )
        for task in TASKS
        for encoding in ENCODINGS
        for seed in SEEDS
    ]
