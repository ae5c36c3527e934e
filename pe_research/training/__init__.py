"""Training on top of the core: the pure step, packed programs, the loop that writes run
directories, checkpoints and per-length evaluation.

    step.py         optimizer, loss, model state, the pure step and the batch sampler
    hyperparameters.py  the numbers packed models may differ in (learning rate, RoPE base)
    program.py      runs that differ only in their seed packed into one compiled program; one
                    compiled step shared by runs of the same program shape
    loop.py         train / train_group: resume, the loop, evaluate and finish
    run_log.py      each run's metrics.jsonl and failure state
    checkpoints.py  orbax checkpoints of a run
    evaluate.py     per-length metrics on length buckets
    flops.py        analytic matmul FLOPs of a step, an evaluation, a fit check
"""

from pe_research.training.loop import CHECKPOINT_EVERY, compile_group, train, train_group
from pe_research.training.program import (
    Placement,
    Program,
    build_program,
    group_key,
    program_key,
)
from pe_research.training.run_log import RunLog, TrainingDiverged
from pe_research.training.step import (
    Keys,
    TrainState,
    init_model,
    init_state,
    keys_from_seed,
    loss_and_metrics,
    make_batch_step,
    make_optimizer,
    make_sampler,
    make_step,
    make_train_step,
)

__all__ = [
    "CHECKPOINT_EVERY",
    "Keys",
    "Placement",
    "Program",
    "RunLog",
    "TrainState",
    "TrainingDiverged",
    "build_program",
    "compile_group",
    "group_key",
    "init_model",
    "init_state",
    "keys_from_seed",
    "loss_and_metrics",
    "make_batch_step",
    "make_optimizer",
    "make_sampler",
    "make_step",
    "make_train_step",
    "program_key",
    "train",
    "train_group",
]
