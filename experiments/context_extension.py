"""Context extension without retraining: a RoPE model trained at length L, evaluated at 1x-8x L
with each RoPE frequency scaling applied at evaluation time only, next to ALiBi and NoPE.

Command (from the repository root):

    pe-research sweep context_extension
    pe-research sweep context_extension --scale gpu

Scalings (the `rope_scaling` convention of Llama-family configs), each with factor 8 = the
longest evaluation length over the training length: linear (position interpolation, Chen et
al. 2023), ntk, dynamic (NTK), yarn (Peng et al. 2023) and llama3. The runs that differ only in
their evaluation encoding share one training (train.train_group), so RoPE is trained once per
task.

Runtime and result: RESULT_PLACEHOLDER
"""

import dataclasses

from pe_research import encodings, tasks
from pe_research.config import ModelConfig, RunConfig, TrainConfig

TASKS = ["copy", "reverse", "offset"]
SCALES = {
    "cpu": (ModelConfig(), TrainConfig(steps=500, train_length=16)),
    "gpu": (ModelConfig(num_layers=4, d_model=256, num_heads=8, mlp_dim=1024),
            TrainConfig(steps=5000, batch_size=128, train_length=32, learning_rate=5e-4)),
}  # fmt: skip


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
    return out
