"""Real text at the byte level: corpora and their deterministic train/validation split, read
from a file, from Python's own help text, or from the `pe_text` dataset that freezes the split
as array_record (its builder is pe_research.data.text).

Nothing is fetched from the internet. A corpus is one of
- a plain-text file, read as bytes: any encoding works, invalid UTF-8 included, since bytes are
  never decoded;
- `builtin:pydoc_topics`: the help topics that ship with Python (pydoc_data.topics, 466 KB);
- `tfds:pe_text/NAME`: a built pe_text dataset, read from $PE_RESEARCH_DATA_DIR.

The split is a contiguous tail, as in enwik8: the last `validation_fraction` of the bytes
(rounded, at least one byte) is validation, the rest train, so no window straddles the two.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from pe_research.data import store

BUILTIN = "builtin:pydoc_topics"
DEFAULT_CORPUS = "data/kjv.txt"
CORPUS_HELP = (
    "Get the King James Bible (public domain, 4.4 MB of text) from the Debian/Ubuntu package "
    "bible-kjv: `sudo apt-get install bible-kjv && mkdir -p data && "
    "bible -f 'Gen1:1-Rev22:21' > data/kjv.txt`. Or choose any plain-text file with "
    f"--corpus PATH (read as bytes, any encoding), or --corpus {BUILTIN} (Python's own help "
    "text, present wherever Python is)."
)
SPLITS = ("train", "validation")
BUILDER = "pe_text"
"""The tensorflow-datasets builder of frozen corpora (pe_research.data.text.TextBuilder)."""
VERSION = "1.0.0"
RELEASE_NOTES = {"1.0.0": "first version: contiguous tail split, records of raw bytes"}


def read_corpus(corpus: str) -> bytes:
    """The bytes of a builtin or file corpus; FileNotFoundError or ValueError says how to get
    one when the file is missing or empty."""
    if corpus == BUILTIN:
        import pydoc_data.topics

        return "".join(pydoc_data.topics.topics.values()).encode()
    if corpus.startswith("builtin:"):
        raise ValueError(f"Unknown builtin corpus {corpus!r}; the builtin corpus is {BUILTIN}.")
    path = Path(corpus).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"Corpus file {path} does not exist. {CORPUS_HELP}")
    if not path.is_file():
        raise ValueError(f"Corpus {path} is not a file. {CORPUS_HELP}")
    data = path.read_bytes()
    if not data:
        raise ValueError(f"Corpus file {path} is empty. {CORPUS_HELP}")
    return data


def split_corpus(data: bytes, validation_fraction: float) -> tuple[bytes, bytes]:
    """(train, validation): validation is the last `validation_fraction` of the bytes."""
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be in (0, 1), got {validation_fraction}.")
    if len(data) < 2:
        raise ValueError(
            f"A corpus of {len(data)} byte(s) cannot be split into train and validation. "
            + CORPUS_HELP
        )
    held = min(max(1, round(len(data) * validation_fraction)), len(data) - 1)
    return data[:-held], data[-held:]


def corpus_split(corpus: str, split: str, validation_fraction: float) -> np.ndarray:
    """One split of a corpus as uint8, read once per process (a file again when it changes)."""
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}; choose one of {SPLITS}.")
    stamp: Any = None  # what makes a cached read stale
    if corpus.startswith(store.PREFIX):
        stamp = str(store.data_dir())
    elif not corpus.startswith("builtin:") and os.path.isfile(corpus):
        st = os.stat(corpus)
        stamp = (st.st_mtime_ns, st.st_size)
    return _splits(corpus, validation_fraction, stamp)[split]


@functools.lru_cache(maxsize=4)
def _splits(corpus: str, validation_fraction: float, stamp: Any) -> dict[str, np.ndarray]:
    if corpus.startswith(store.PREFIX):
        return read_built(corpus, validation_fraction)
    parts = split_corpus(read_corpus(corpus), validation_fraction)
    return {s: np.frombuffer(p, np.uint8) for s, p in zip(SPLITS, parts, strict=True)}


def describe(corpus: str, validation_fraction: float) -> str:
    """What a run's numbers were measured on: the corpus, its size and digest, the split."""
    train = corpus_split(corpus, "train", validation_fraction)
    validation = corpus_split(corpus, "validation", validation_fraction)
    digest = hashlib.sha256(train.tobytes() + validation.tobytes()).hexdigest()[:16]
    return (
        f"{corpus} ({train.size + validation.size} bytes, sha256 {digest}); "
        f"validation split: the last {validation.size} bytes"
    )


def rebuild_command(config: str, root: Any) -> str:
    return f"pe-research data build text --config {config} --corpus FILE --data-dir {root}"


def built_path(spec: store.Spec, root: Path) -> Path:
    """The folder of a built pe_text dataset; errors say how to build it."""
    if spec.builder != BUILDER:
        raise ValueError(f"{spec} is not a text corpus; text corpora are tfds:{BUILDER}/NAME.")
    return store.require_built(
        root,
        spec,
        VERSION,
        release_notes=RELEASE_NOTES[VERSION],
        rebuild=rebuild_command(spec.config, root),
    )


def read_built(corpus: str, validation_fraction: float) -> dict[str, np.ndarray]:
    """The splits of a built `tfds:pe_text/NAME` (data dir: $PE_RESEARCH_DATA_DIR)."""
    # Imported only when a built corpus is read: tensorflow-datasets takes about a second to
    # import, and every task (so the command line's --help) imports this module.
    import tensorflow_datasets as tfds

    path = built_path(store.parse_spec(corpus), store.data_dir())
    builder = tfds.builder_from_directory(path)
    built_fraction = builder.info.metadata["validation_fraction"]
    if built_fraction != validation_fraction:
        raise ValueError(
            f"{corpus} was split with validation_fraction {built_fraction}, but the task asks "
            f"for {validation_fraction}: set --validation-fraction {built_fraction}, or rebuild "
            "the dataset with the fraction you want."
        )
    out = {}
    for split in SPLITS:
        source = builder.as_data_source(split)
        records = source.__getitems__(range(len(source)))
        out[split] = np.concatenate([r["bytes"] for r in records]).astype(np.uint8)
    return out
