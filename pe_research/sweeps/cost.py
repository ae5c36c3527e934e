"""What a sweep will cost before it runs: matmul FLOPs from the models and step counts, and the
hours they would take on one H200, from the accelerator bench's measurements there.

The hours are a lower bound, the larger of two measured rates (benchmarks/2026-12-04-h200-*):
FLOPs at the rate the paper-scale model reached (12 layers, d_model 768, bf16: 163 TFLOP/s, 16%
of the published BF16 peak), and steps at the time one step of the main job's 4-layer d_model 64
model took (0.91 ms: small models are bound by dispatch, not matmuls). Models between the two
reach less than either: on mcgill's gpu scale (6 layers, d_model 256, fp32, 3 seeds packed), 4
of count_copy's 7 trainings took 266 s of wall time side by side (4 processes sharing the chip),
where this bound gives all 7 of them 99 s. FLOPs count training to the step cap (a run trained
until fit may stop earlier), the fit checks, and the final evaluation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pe_research import train
from pe_research.config import RunConfig
from pe_research.training import flops

H200_LARGE_MODEL_RATE = 163e12
"""FLOP/s the paper-scale workload of `pe-research bench accelerator` reached on an H200 (bf16,
batch 64 of copy 1..40: 10.1 ms per step; benchmarks/2026-12-04-h200-645fffc-2.json)."""
H200_STEP_FLOOR_S = 0.91e-3
"""Seconds per step of the main job's model (4 layers, d_model 64, batch 64, fp32) on an H200, the
fastest step measured there (benchmarks/2026-12-04-h200-645fffc.json, main-packed K=1)."""


@dataclasses.dataclass(frozen=True)
class Estimate:
    """FLOPs of a set of runs: trainings (seeds packed), fit checks and evaluations."""

    runs: int
    trainings: int
    train_flops: float
    check_flops: float
    eval_flops: float
    max_steps: int
    total_steps: int
    """Training steps of all trainings at their caps (a dispatch-bound model pays per step)."""

    @property
    def total_flops(self) -> float:
        return self.train_flops + self.check_flops + self.eval_flops

    def accelerator_hours(self) -> float:
        """A lower bound on one H200: the larger of the FLOPs at the large model's measured rate
        and the steps at the smallest model's measured step time."""
        return max(self.total_flops / H200_LARGE_MODEL_RATE,
                   self.total_steps * H200_STEP_FLOOR_S) / 3600  # fmt: skip

    def text(self) -> str:
        return (
            f"Estimated cost: {self.runs} runs in {self.trainings} trainings (seeds packed), at "
            f"most {self.max_steps:,} steps each ({self.total_steps:,} in all): "
            f"{self.total_flops:.3g} matmul FLOPs "
            f"({self.train_flops:.3g} training to the step cap, {self.check_flops:.3g} fit "
            f"checks, {self.eval_flops:.3g} evaluation). On one H200: at least "
            f"{self.accelerator_hours():.3g} h, the larger of these FLOPs at "
            f"{H200_LARGE_MODEL_RATE / 1e12:.0f} TFLOP/s (a 12-layer d_model 768 model in bf16) "
            f"and these steps at {H200_STEP_FLOOR_S * 1e3:.2f} ms (a 4-layer d_model 64 model), "
            "both measured there (benchmarks/); mid-size models take longer (sweeps/cost.py)."
        )


def estimate(configs: Sequence[RunConfig]) -> Estimate:
    """The cost of training and evaluating `configs` as a sweep does: runs that differ only in
    their seed or evaluation train together (one packed program), each run is evaluated."""
    groups: dict[RunConfig, list[RunConfig]] = {}
    for cfg in configs:
        groups.setdefault(train.group_key(cfg), []).append(cfg)
    training = checks = 0.0
    for members in groups.values():
        cfg = members[0]
        seeds = len({c.seed for c in members})
        training += flops.train_step_flops(cfg, seeds) * cfg.train.steps
        if cfg.train.stop_when_fit:
            checks += (
                seeds * flops.fit_check_flops(cfg) * (cfg.train.steps // cfg.train.fit_check_every)
            )
    return Estimate(
        runs=len(configs),
        trainings=len(groups),
        train_flops=training,
        check_flops=checks,
        eval_flops=sum(flops.eval_flops(c) for c in configs),
        max_steps=max((c.train.steps for c in configs), default=0),
        total_steps=sum(members[0].train.steps for members in groups.values()),
    )
