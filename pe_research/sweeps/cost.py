"""What a sweep will cost before it runs: matmul FLOPs from the models and step counts, and the
hours they would take on one accelerator under a stated assumption.

There is no measured accelerator bench of these workloads yet, so the hours use the chip's
published peak and an assumed fraction of it (`ASSUMED_UTILIZATION`), both named in the text the
sweep prints. Small models (d_model <= 256) are bound by dispatch and memory traffic rather than
matmuls and will reach less: read their hours as a lower bound. FLOPs count training to the step
cap (a run trained until fit may stop earlier), the fit checks, and the final evaluation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pe_research import train
from pe_research.config import RunConfig
from pe_research.training import flops

H200_BF16_PEAK = 989e12
"""FLOP/s: NVIDIA's published dense BF16 Tensor Core peak of the H200 SXM (1,979 TFLOP/s is the
figure with structured sparsity, which these models do not use)."""
ASSUMED_UTILIZATION = 0.10
"""An assumption, not a measurement: the fraction of that peak the training step reaches."""


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

    def accelerator_hours(
        self, peak: float = H200_BF16_PEAK, utilization: float = ASSUMED_UTILIZATION
    ) -> float:
        return self.total_flops / (peak * utilization) / 3600

    def text(self) -> str:
        return (
            f"Estimated cost: {self.runs} runs in {self.trainings} trainings (seeds packed), at "
            f"most {self.max_steps:,} steps each ({self.total_steps:,} in all): "
            f"{self.total_flops:.3g} matmul FLOPs "
            f"({self.train_flops:.3g} training to the step cap, {self.check_flops:.3g} fit "
            f"checks, {self.eval_flops:.3g} evaluation). On one H200: about "
            f"{self.accelerator_hours():.3g} h, assuming {ASSUMED_UTILIZATION:.0%} of its "
            f"published dense BF16 peak of {H200_BF16_PEAK / 1e12:.0f} TFLOP/s (an assumption: "
            "no accelerator bench of these models exists yet; small models reach less, so read "
            "it as a lower bound)."
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
