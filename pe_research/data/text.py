"""The tensorflow-datasets builder `pe_text`: a byte-level corpus frozen as array_record, its
train and validation splits as records of raw bytes (pe_research.data.corpus reads them back)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import tensorflow_datasets as tfds

from pe_research.data.corpus import (
    BUILDER,
    BUILTIN,
    DEFAULT_CORPUS,
    RELEASE_NOTES,
    SPLITS,
    VERSION,
    read_corpus,
    split_corpus,
)


@dataclasses.dataclass(eq=False)
class TextConfig(tfds.core.BuilderConfig):
    """A corpus (file path or builtin), its validation fraction and the record size."""

    path: str = DEFAULT_CORPUS
    validation_fraction: float = 0.1
    record_bytes: int = 4096


class TextBuilder(tfds.core.GeneratorBasedBuilder):
    """Splits `train` and `validation` of a byte-level corpus, as records of `record_bytes`
    bytes in order (the last record of a split may be shorter): concatenated, a split's records
    give back its bytes exactly."""

    name = BUILDER
    VERSION = tfds.core.Version(VERSION)
    RELEASE_NOTES = RELEASE_NOTES
    BUILDER_CONFIGS = [
        TextConfig(
            name="kjv",
            description="the King James Bible as written by `bible -f 'Gen1:1-Rev22:21'`",
            path=DEFAULT_CORPUS,
        ),
        TextConfig(name="pydoc_topics", description="Python's help topics", path=BUILTIN),
    ]

    @functools.cached_property
    def corpus(self) -> bytes:
        return read_corpus(self.builder_config.path)

    def _info(self) -> tfds.core.DatasetInfo:
        config = self.builder_config
        train, validation = split_corpus(self.corpus, config.validation_fraction)
        return tfds.core.DatasetInfo(
            builder=self,
            description=(
                f"Bytes of {config.path}; validation is the last {config.validation_fraction} of "
                f"them; records of {config.record_bytes} bytes in order."
            ),
            features=tfds.features.FeaturesDict(
                {"bytes": tfds.features.Tensor(shape=(None,), dtype=np.uint8)}
            ),
            disable_shuffling=True,
            metadata=tfds.core.MetadataDict(
                corpus=config.path,
                sha256=hashlib.sha256(self.corpus).hexdigest(),
                validation_fraction=config.validation_fraction,
                train_bytes=len(train),
                validation_bytes=len(validation),
            ),
        )

    def _split_generators(self, dl_manager: Any) -> dict[str, Iterator]:
        parts = split_corpus(self.corpus, self.builder_config.validation_fraction)
        return {s: self._generate_examples(p) for s, p in zip(SPLITS, parts, strict=True)}

    def _generate_examples(self, data: bytes) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        size = self.builder_config.record_bytes
        for i, start in enumerate(range(0, len(data), size)):
            yield i, {"bytes": np.frombuffer(data[start : start + size], np.uint8)}
