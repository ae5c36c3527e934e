"""Default experiment: which encodings let a small transformer generalize to longer sequences?

Command (from the repository root):

    pe-research sweep default

Five encodings (NoPE, sinusoidal, learned absolute, RoPE, ALiBi) x three tasks (copy, reverse,
offset k=3), a 2-layer causal decoder (d_model 64, 4 heads), trained for 500 steps on 1..16
symbols and evaluated at 16, 32, ..., 128 symbols (1x-8x the training length), 128 sequences
per length. Writes runs/default/<task>/<encoding>/seed0-<hash>/ and
runs/default/extrapolation_{token_accuracy,exact_match}.png.

Runtime and result: RESULT_PLACEHOLDER
"""

from pe_research import encodings, tasks
from pe_research.config import RunConfig, TrainConfig

ENCODINGS = ["nope", "sinusoidal", "learned", "rope", "alibi"]
TASKS = ["copy", "reverse", "offset"]


def runs() -> list[RunConfig]:
    return [
        RunConfig(
            task=tasks.get(task),
            encoding=encodings.get(encoding),
            train=TrainConfig(steps=500, train_length=16),
        )
        for task in TASKS
        for encoding in ENCODINGS
    ]
