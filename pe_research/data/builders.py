"""Frozen evaluation sets of the synthetic tasks as tensorflow-datasets builders (array_record).

One builder per task (`pe_copy`, `pe_reverse`, `pe_offset`, `pe_duplicate`, `pe_count_copy`,
`pe_grid`, `pe_addition`, `pe_flip_flop`, `pe_selective_copy`, `pe_counting`, `pe_sort`,
`pe_multiplication`, `pe_mqar`, `pe_local_count`), the task with its default options. Named configs
are length grids: `L16` holds the default evaluation grid of a model trained at length 16 (16, 32,
..., 128) for decoders, `L16-encoder` the same for encoders; `per_length` sequences per length.
Building needs no TensorFlow: examples are written as array_record and read back with
`tfds.data_source`.

An example is one sequence exactly as evaluation samples it on the fly (`tasks.eval_batch`
with the key of the evaluation seed and the length, padded to the length's bucket), stored
trimmed to `task.seq_len(n)`; read back, it is padded with PAD and masks. Evaluating from the
built set and sampling on the fly therefore score identical sequences with identical numbers
(tests/test_data.py checks both). The one difference lies in padding: a decoder batch sampled on
the fly may hold the last answer token in its first masked input position, which no scored
position attends to.

Bump a builder's VERSION, with a RELEASE_NOTES line, whenever its examples change: the task's
sampler, the key scheme, or the features. tests/test_data.py holds a fingerprint of every
builder's examples and fails until the version is bumped.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import jax
import numpy as np
import tensorflow_datasets as tfds

from pe_research import tasks
from pe_research.config import EvalConfig, RunConfig, task_label
from pe_research.data import store
from pe_research.tasks import Batch, Task

SPLIT = "test"
"""The one split of an evaluation set."""


@dataclasses.dataclass(eq=False)
class TaskConfig(tfds.core.BuilderConfig):
    """A length grid: `per_length` sequences of each length, for decoders or encoders."""

    lengths: tuple[int, ...] = ()
    causal: bool = True
    per_length: int = EvalConfig.batch_size
    seed: int = EvalConfig.seed


def grid_configs(train_lengths: tuple[int, ...], *, encoders: bool = True) -> list[TaskConfig]:
    """`L<n>`: 1x-8x the training length n (the default evaluation grid), and `L<n>-encoder`."""
    out = []
    for n in train_lengths:
        for causal in (True, False) if encoders else (True,):
            out.append(
                TaskConfig(
                    name=f"L{n}" + ("" if causal else "-encoder"),
                    description=f"lengths {n}..{8 * n} (1x-8x {n}), "
                    + ("causal decoders" if causal else "bidirectional encoders"),
                    lengths=tuple(n * k for k in range(1, 9)),
                    causal=causal,
                )
            )
    return out


@functools.partial(jax.jit, static_argnames=("task", "config"))
def _eval_batches(task: Task, config: TaskConfig) -> list[Batch]:
    """Every length's evaluation batch, in one compiled program (one compile per config)."""
    root = jax.random.key(config.seed)
    out = []
    for n in config.lengths:
        k_task, _ = tasks.length_keys(root, n)
        pad_to = tasks.bucket(task.seq_len(n, config.causal))
        batch = tasks.eval_batch(
            task, k_task, config.per_length, n, pad_to=pad_to, causal=config.causal
        )
        out.append(batch)
    return out


def generate(task: Task, config: TaskConfig) -> Iterator[tuple[int, dict[str, Any]]]:
    """(key, example) of every sequence of `config`, lengths in order: what evaluation samples
    (`tasks.eval_batch` with the length's key), trimmed to the sequence's width."""
    for i, (n, batch) in enumerate(zip(config.lengths, _eval_batches(task, config), strict=True)):
        width = task.seq_len(n, config.causal)
        fields = {k: np.asarray(v)[:, :width] for k, v in batch._asdict().items() if v is not None}
        for b in range(config.per_length):
            yield i * config.per_length + b, {"length": n, **{k: v[b] for k, v in fields.items()}}


class TaskBuilder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """Base of the task builders: one split, `test`, the examples in generation order."""

    TASK: ClassVar[str]
    BUILDER_CONFIGS = grid_configs((8, 16, 32))

    @classmethod
    def task(cls) -> Task:
        return tasks.get(cls.TASK)

    def _info(self) -> tfds.core.DatasetInfo:
        task, config = self.task(), self.builder_config
        tokens = tfds.features.Tensor(shape=(None,), dtype=np.int32)
        flags = tfds.features.Tensor(shape=(None,), dtype=np.bool_)
        features = {
            "length": tfds.features.Scalar(dtype=np.int32),
            "inputs": tokens,
            "targets": tokens,
            "loss_mask": flags,
            "valid": flags,
        }
        if task.position_axes is not None:
            features["coords"] = tfds.features.Tensor(
                shape=(None, task.position_axes), dtype=np.int32
            )
        return tfds.core.DatasetInfo(
            builder=self,
            description=(
                f"pe_research task {task_label(task)} ({type(task).__name__}), "
                f"{config.per_length} sequences per length for lengths {list(config.lengths)}, "
                f"{'decoder' if config.causal else 'encoder'} form, evaluation seed {config.seed}. "
                "Examples equal pe_research.training.evaluate's on-the-fly samples."
            ),
            features=tfds.features.FeaturesDict(features),
            disable_shuffling=True,  # examples stay in generation order: length by length
            metadata=tfds.core.MetadataDict(
                task={"name": task.name, **dataclasses.asdict(task)},
                lengths=list(config.lengths),
                causal=config.causal,
                per_length=config.per_length,
                seed=config.seed,
                jax=jax.__version__,
            ),
        )

    def _split_generators(self, dl_manager: Any) -> dict[str, Iterator]:
        return {SPLIT: self._generate_examples()}

    def _generate_examples(self) -> Iterator[tuple[int, dict[str, Any]]]:
        return generate(self.task(), self.builder_config)


def _first_version(task: str) -> dict[str, str]:
    return {"1.0.0": f"first version: tasks.eval_batch of tasks.get({task!r})"}


class PeCopy(TaskBuilder):
    """Copy (tasks.Copy)."""

    name = "pe_copy"
    TASK = "copy"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = _first_version(TASK)


class PeReverse(TaskBuilder):
    """Reverse (tasks.Reverse)."""

    name = "pe_reverse"
    TASK = "reverse"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = _first_version(TASK)


class PeOffset(TaskBuilder):
    """Offset, k = 3 (tasks.Offset)."""

    name = "pe_offset"
    TASK = "offset"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = _first_version(TASK)


class PeDuplicate(TaskBuilder):
    """Duplicate string (tasks.Duplicate)."""

    name = "pe_duplicate"
    TASK = "duplicate"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = _first_version(TASK)


class PeCountCopy(TaskBuilder):
    """Copy of one repeated symbol, then END (tasks.CountCopy)."""

    name = "pe_count_copy"
    TASK = "count_copy"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = _first_version(TASK)


class PeGrid(TaskBuilder):
    """Shifted n x n grid (tasks.Grid); lengths are grid sides: `L4` holds sides 4, 5, 6, 8
    (experiments/grid2d.py), `L8` sides 8, 10, 12, 16 (its gpu preset)."""

    name = "pe_grid"
    TASK = "grid"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = _first_version(TASK)
    BUILDER_CONFIGS = [
        TaskConfig(name="L4", description="grid sides 4, 5, 6, 8", lengths=(4, 5, 6, 8)),
        TaskConfig(name="L8", description="grid sides 8, 10, 12, 16", lengths=(8, 10, 12, 16)),
    ]


class PeAddition(TaskBuilder):
    """Reversed-digit addition, no index hints; lengths are digit counts, and the examples carry
    the coupled positions (tasks.Addition)."""

    name = "pe_addition"
    TASK = "addition"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = _first_version(TASK)


class PeFlipFlop(TaskBuilder):
    """Flip-flop, FFL(0.8); lengths are instruction counts (tasks.FlipFlop)."""

    name = "pe_flip_flop"
    TASK = "flip_flop"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = _first_version(TASK)


class PeSelectiveCopy(TaskBuilder):
    """Selective copy, one noise token per symbol (tasks.SelectiveCopy)."""

    name = "pe_selective_copy"
    TASK = "selective_copy"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = _first_version(TASK)


class PeCounting(TaskBuilder):
    """Counting the query symbol, 3 decimal digits (tasks.Counting)."""

    name = "pe_counting"
    TASK = "counting"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = _first_version(TASK)


class PeSort(TaskBuilder):
    """Sort (tasks.Sort)."""

    name = "pe_sort"
    TASK = "sort"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = _first_version(TASK)


class PeMultiplication(TaskBuilder):
    """Reversed-digit multiplication of two n-digit numbers; lengths are digit counts, and the
    examples carry each digit's place (tasks.Multiplication)."""

    name = "pe_multiplication"
    TASK = "multiplication"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = _first_version(TASK)


class PeMQAR(TaskBuilder):
    """Multi-query associative recall, 256 keys; lengths are pair counts (tasks.MQAR)."""

    name = "pe_mqar"
    TASK = "mqar"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = _first_version(TASK)


class PeLocalCount(TaskBuilder):
    """Local count, runs of 2-8, between start and end tokens (tasks.LocalCount)."""

    name = "pe_local_count"
    TASK = "local_count"
    VERSION = tfds.core.Version("1.1.0")
    RELEASE_NOTES = {
        **_first_version(TASK),
        "1.1.0": "the stream between SEP (start) and END, unscored, as the paper's BOS and EOS",
    }


TASK_BUILDERS: dict[str, type[TaskBuilder]] = {
    cls.TASK: cls
    for cls in (
        PeCopy,
        PeReverse,
        PeOffset,
        PeDuplicate,
        PeCountCopy,
        PeGrid,
        PeAddition,
        PeFlipFlop,
        PeSelectiveCopy,
        PeCounting,
        PeSort,
        PeMultiplication,
        PeMQAR,
        PeLocalCount,
    )
}
"""Task name -> its builder."""


def config_of(cls: type[TaskBuilder], name: str) -> TaskConfig:
    """The named config of a builder; ValueError lists the names."""
    configs = {c.name: c for c in cls.BUILDER_CONFIGS}
    if name not in configs:
        raise ValueError(
            f"{cls.name} has no config {name!r}; it has: {', '.join(configs)}. (L<n>: lengths "
            "1x-8x n for decoders; L<n>-encoder: the same for encoders.)"
        )
    return configs[name]


def rebuild_command(cls: type[TaskBuilder], config: str, root: Any) -> str:
    return f"pe-research data build {cls.TASK} --config {config} --data-dir {root}"


@dataclasses.dataclass(frozen=True)
class Built:
    """A built evaluation set on disk, described by its own metadata (so a config built from
    Python with any length grid reads like a named one)."""

    label: str  # tfds:BUILDER/CONFIG:VERSION
    path: Path
    task: Task
    lengths: tuple[int, ...]
    causal: bool
    per_length: int
    seed: int


def open_built(spec: str, data_dir: str | Path | None = None) -> Built:
    """The built set `spec` (tfds:pe_<task>/CONFIG[:VERSION]) in the data dir; errors say how to
    build it, or to rebuild it when the folder holds another version."""
    parsed = store.parse_spec(spec)
    by_name = {cls.name: cls for cls in TASK_BUILDERS.values()}
    if parsed.builder not in by_name:
        hint = (
            " pe_text is a corpus: give it to the byte_lm task as --corpus tfds:pe_text/NAME."
            if parsed.builder == "pe_text"
            else ""
        )
        raise ValueError(
            f"{spec}: {parsed.builder!r} is not an evaluation set; choose one of "
            f"{', '.join(by_name)}.{hint}"
        )
    cls = by_name[parsed.builder]
    version = str(cls.VERSION)
    if parsed.version not in (None, version):
        raise ValueError(
            f"{spec}: this code generates version {version} of {cls.name}; drop the version "
            f"or write :{version}."
        )
    root = store.data_dir(data_dir)
    path = store.require_built(
        root,
        parsed,
        version,
        release_notes=cls.RELEASE_NOTES[version],
        rebuild=rebuild_command(cls, parsed.config, root),
    )
    meta = json.loads((path / "metadata.json").read_text())
    options = dict(meta["task"])
    return Built(
        label=f"{store.PREFIX}{cls.name}/{parsed.config}:{version}",
        path=path,
        task=tasks.get(options.pop("name"), **options),
        lengths=tuple(meta["lengths"]),
        causal=bool(meta["causal"]),
        per_length=int(meta["per_length"]),
        seed=int(meta["seed"]),
    )


def check_run(cfg: RunConfig) -> None:
    """Raise ValueError (FileNotFoundError if not built) unless `cfg.eval.data` names a built
    set that holds exactly what this run evaluates: its task, model form, lengths, count, seed."""
    built = open_built(cfg.eval.data, cfg.eval.data_dir)
    name = built.label
    if cfg.task != built.task:
        raise ValueError(
            f"--eval.data {name} holds {task_label(built.task)} but this run's task is "
            f"{task_label(cfg.task)}: evaluate on the fly (drop --eval.data)."
        )
    if built.causal != cfg.model.causal:
        have = "decoder" if built.causal else "encoder"
        want = "a decoder" if cfg.model.causal else "an encoder"
        config = store.parse_spec(cfg.eval.data).config.removesuffix("-encoder")
        raise ValueError(
            f"--eval.data {name} holds {have} sequences but the model is {want}: use the "
            f"config {config + ('' if cfg.model.causal else '-encoder')}."
        )
    missing = sorted(set(cfg.eval_lengths) - set(built.lengths))
    if missing:
        raise ValueError(
            f"--eval.data {name} has lengths {list(built.lengths)}, not {missing}: set "
            "--eval.lengths to a subset of them, or pick the config of your training length."
        )
    if cfg.eval.batch_size > built.per_length:
        raise ValueError(
            f"--eval.data {name} has {built.per_length} sequences per length; lower "
            f"--eval.batch-size (now {cfg.eval.batch_size}) to at most that."
        )
    if cfg.eval.seed != built.seed:
        raise ValueError(
            f"--eval.data {name} was generated with evaluation seed {built.seed}, but this run "
            f"asks for seed {cfg.eval.seed}: drop --eval.seed, or evaluate on the fly."
        )
