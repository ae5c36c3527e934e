"""Randomized positions: Ruoss et al. (2023), "Randomized Positional Encodings Boost Length
Generalization of Transformers", encoder mode, per-token accuracy.

Command (from the repository root):

    pe-research sweep randomized
    pe-research sweep randomized --scale gpu

Each encoding is trained with contiguous positions and with randomized ones (a sorted sample
without replacement from [0, max_pos), max_pos above the longest evaluation sequence, used at
evaluation too, as in the paper), on reverse and duplicate, as a bidirectional encoder that
fills BLANK placeholders. CPU size: training lengths <= 16, evaluation up to 64 (4x); the paper
trains on <= 40 and tests up to 500.

Runtime: 6 min 50 s on the 2-core CPU development machine, sharing it with another sweep (16
runs of 19-30 s).

Result (token accuracy in distribution (16) / 2x (32) / 4x (64), seed 0; contiguous positions
vs randomized positions from [0, 256)):

    encoding      reverse: contig.     randomized           duplicate: contig.   randomized
    sinusoidal    .56 /.10 /.09        .35 /.29 /.20        .38 /.12 /.08        .25 /.21 /.17
    rope          .95 /.13 /.08        .39 /.27 /.20        .64 /.06 /.06        .25 /.21 /.17
    alibi         .73 /.42 /.24        .33 /.25 /.19        .19 /.15 /.11        .19 /.15 /.12
    learned       .19 /.15 /.12        .19 /.15 /.12        .18 /.15 /.12        .19 /.15 /.12

- As in Ruoss et al., randomized positions trade in-distribution fit for a much slower decay
  with length: for RoPE and sinusoidal on both tasks they are 2-3x better at 2x and 4x (for
  example RoPE on reverse .27/.20 against .13/.08).
- But at this CPU budget (500 steps, batch 32, 2 layers) the encoders are under-trained: no
  run fits either task in distribution except RoPE on reverse (95%), randomized runs fit
  worse than contiguous ones, and learned absolute positions do not train at all (same numbers
  with and without randomization). Ruoss et al. train for far longer (`--scale gpu`: 10,000
  steps, 5 layers); their reported gains are on fitted models, which these are not.
"""

from pe_research import encodings, positions, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig

ENCODINGS = ["sinusoidal", "learned", "rope", "alibi"]
TASKS = ["reverse", "duplicate"]
SCALES = {
    "cpu": dict(train_length=16, lengths=(16, 24, 32, 48, 64), max_pos=256, steps=500,
                model=ModelConfig(causal=False)),
    "gpu": dict(train_length=40, lengths=(40, 60, 80, 120, 160, 250, 500), max_pos=2048,
                steps=10000,
                model=ModelConfig(num_layers=5, d_model=64, num_heads=8, mlp_dim=256,
                                  causal=False)),
}  # fmt: skip


def runs(scale: str = "cpu") -> list[RunConfig]:
    s = SCALES[scale]
    samplers = [positions.get("contiguous"), positions.get("randomized", max_pos=s["max_pos"])]
    return [
        RunConfig(
            task=tasks.get(task),
            encoding=encodings.get(
                name, **({"max_positions": s["max_pos"]} if name == "learned" else {})
            ),
            model=s["model"],
            train=TrainConfig(steps=s["steps"], batch_size=32, train_length=s["train_length"]),
            eval=EvalConfig(lengths=s["lengths"], positions="train"),
            positions=sampler,
        )
        for task in TASKS
        for name in ENCODINGS
        for sampler in samplers
    ]
