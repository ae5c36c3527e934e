"""Synthetic position-sensitive tasks, sampled on device inside the jitted step, by family:

    base            Batch, the Task base and the prompt-answer machinery they share
    rearrangements  copy, reverse, duplicate, count_copy, sort, offset (n-back)
    grids           grid (2-D coordinates per token), video (3-D: frame, row, col)
    arithmetic      addition (reversed digits, index hints, coupled positions), multiplication
    contextual      flip_flop, selective_copy, counting, local_count
    recall          mqar (multi-query associative recall)
    text            byte_lm (next-byte prediction on a local corpus)
    evaluation      the held-out sequences evaluation scores at a length

`get(name, **options)` gives a checked task; `names()` and `classes()` list them. Adding a task:
a class in its family module and a line in `_REGISTRY`.
"""

from __future__ import annotations

from typing import Any

from pe_research.registry import Registry
from pe_research.tasks.arithmetic import Addition, Multiplication, add_reversed, multiply_reversed
from pe_research.tasks.base import Batch, PromptAnswer, Task
from pe_research.tasks.contextual import Counting, FlipFlop, LocalCount, SelectiveCopy
from pe_research.tasks.evaluation import bucket, eval_batch, length_keys
from pe_research.tasks.grids import Grid, Video
from pe_research.tasks.rearrangements import Copy, CountCopy, Duplicate, Offset, Reverse, Sort
from pe_research.tasks.recall import MQAR
from pe_research.tasks.text import ByteLM

_REGISTRY: Registry[Task] = Registry(
    "task",
    "option",
    (
        Copy,
        Reverse,
        Offset,
        Duplicate,
        CountCopy,
        Grid,
        ByteLM,
        Addition,
        FlipFlop,
        SelectiveCopy,
        Counting,
        Sort,
        Multiplication,
        MQAR,
        LocalCount,
        Video,
    ),
    hints={
        "end_token": (
            "An end token ends a finite answer: it is an option of copy, reverse, duplicate and "
            "addition (count_copy always ends with END); offset and byte_lm predict a stream "
            "with no end and grid a fixed block: drop end_token, or choose one of those tasks."
        ),
    },
)
names = _REGISTRY.names
classes = _REGISTRY.classes


def get(name: str, **options: Any) -> Task:
    """The task `name` with the given options, checked; ValueError lists the known tasks."""
    task = _REGISTRY.get(name, **options)
    task.check()
    return task


__all__ = [
    "MQAR", "Addition", "Batch", "ByteLM", "Copy", "CountCopy", "Counting", "Duplicate",
    "FlipFlop", "Grid", "LocalCount", "Multiplication", "Offset", "PromptAnswer", "Reverse",
    "SelectiveCopy", "Sort", "Task", "Video", "add_reversed", "bucket", "classes", "eval_batch",
    "get", "length_keys", "multiply_reversed", "names",
]  # fmt: skip
