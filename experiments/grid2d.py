"""Does axial 2-D RoPE carry a fixed 2-D offset to grids larger than it trained on?

The `grid` task shows an n x n grid of symbols row by row, then SEP, and asks for every cell of
a second grid the symbol one row up and one column left in the first. Axial 2-D RoPE (`rope_nd`)
rotates by each token's (row, col); 1-D RoPE and learned absolute positions see the flattened
index, in which the same 2-D offset is a distance that grows with n. Trained on sides 1-4,
evaluated on sides 4-8, 3 seeds.

    pe-research sweep grid2d
    pe-research sweep grid2d --scale gpu

Cost: cpu, 9 runs in 3 trainings, a few minutes on 2 CPU cores.
Results: docs/results/grid2d/summary.md.
"""

from pe_research import encodings, positions, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.sweeps.experiments import GPU_MODEL, gpu_train

SCALES = {
    "cpu": (ModelConfig(), TrainConfig(steps=600, batch_size=32, train_length=4), (4, 5, 6, 8)),
    "gpu": (GPU_MODEL, gpu_train(train_length=8), (8, 10, 12, 16)),
}  # fmt: skip
SEEDS = (0, 1, 2)


def runs(scale: str = "cpu") -> list[RunConfig]:
    model, train, lengths = SCALES[scale]
    variants = [
        (encodings.get("rope_nd", axes=2), positions.get("grid")),
        (encodings.get("rope"), positions.get("contiguous")),
        (encodings.get("learned"), positions.get("contiguous")),
    ]
    return [
        RunConfig(
            task=tasks.get("grid"),
            encoding=encoding,
            positions=sampler,
            model=model,
            train=train,
            eval=EvalConfig(lengths=lengths),
            seed=seed,
        )
        for encoding, sampler in variants
        for seed in SEEDS
    ]
