"""Reading built evaluation sets: `tfds.data_source` (random access, no TensorFlow) through grain,
one batch per evaluation length, padded to the length's power-of-two bucket."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import grain
import numpy as np
import tensorflow_datasets as tfds

from pe_research import tasks
from pe_research.data import builders
from pe_research.tasks import Batch

FILL = {"inputs": None, "targets": None, "loss_mask": False, "valid": False, "coords": 0}
"""Padding value of each feature (None: the task's PAD token)."""


def pad_example(example: dict[str, Any], *, width: int, pad: int) -> dict[str, Any]:
    """Pad every per-token feature of one example to `width` tokens."""
    out = {"length": example["length"]}
    for name, fill in FILL.items():
        if name in example:
            x = example[name]
            widths = [(0, width - x.shape[0])] + [(0, 0)] * (x.ndim - 1)
            out[name] = np.pad(x, widths, constant_values=pad if fill is None else fill)
    return out


class EvalSet:
    """A built task evaluation set (`tfds:pe_<task>/<config>`), read from `data_dir`."""

    def __init__(self, spec: str, data_dir: str | Path | None = None):
        self.built = builders.open_built(spec, data_dir)
        self.label, self.path = self.built.label, self.built.path
        self.source = tfds.builder_from_directory(self.path).as_data_source(builders.SPLIT)

    def dataset(self, length: int, batch_size: int, pad_to: int) -> grain.MapDataset:
        """The first `batch_size` sequences of `length`, padded to `pad_to`, as one batch."""
        built = self.built
        if length not in built.lengths:
            raise ValueError(f"{self.label} has lengths {list(built.lengths)}, not {length}.")
        if batch_size > built.per_length:
            raise ValueError(
                f"{self.label} has {built.per_length} sequences per length, not {batch_size}."
            )
        start = built.lengths.index(length) * built.per_length
        pad = functools.partial(pad_example, width=pad_to, pad=built.task.pad)
        return (
            grain.MapDataset.source(self.source)
            .slice(slice(start, start + batch_size))
            .map(pad)
            .batch(batch_size)
        )

    def batch(self, length: int, batch_size: int, pad_to: int) -> Batch:
        """One evaluation batch of `length`, as evaluate samples it on the fly."""
        arrays = self.dataset(length, batch_size, pad_to)[0]
        if not (arrays["length"] == length).all():
            raise ValueError(
                f"{self.path} does not hold its sequences in length order (found lengths "
                f"{sorted(set(arrays['length'].tolist()))} where {length} belongs): the files are "
                "damaged; rebuild with `pe-research data build ... --overwrite`."
            )
        return Batch(
            inputs=arrays["inputs"],
            targets=arrays["targets"],
            loss_mask=arrays["loss_mask"],
            valid=arrays["valid"],
            coords=arrays.get("coords"),
        )


def read_throughput(spec: str, data_dir: str | Path | None = None) -> dict[str, Any]:
    """Read every sequence of a built set through grain (padded to its bucket, batched per
    length) and time it: examples per second through tfds.data_source + grain."""
    eval_set = EvalSet(spec, data_dir)
    built = eval_set.built
    examples = 0
    t0 = time.perf_counter()
    for n in built.lengths:
        pad_to = tasks.bucket(built.task.seq_len(n, built.causal))
        batch = eval_set.batch(n, built.per_length, pad_to)
        examples += batch.inputs.shape[0]
    seconds = time.perf_counter() - t0
    return {
        "dataset": eval_set.label,
        "examples": examples,
        "seconds": round(seconds, 3),
        "examples_per_s": round(examples / seconds, 1),
    }
