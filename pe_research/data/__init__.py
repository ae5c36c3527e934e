"""Frozen, versioned datasets as tensorflow-datasets builders (array_record; no TensorFlow):
evaluation sets of the synthetic tasks, and byte-level text corpora.

    store.py     data dirs, `tfds:BUILDER/CONFIG` names, versions on disk
    builders.py  one builder per task; named configs are length grids
    text.py      corpora (files, builtin), the train/validation split, the pe_text builder
    loader.py    built evaluation sets through tfds.data_source and grain, per-length batches
    catalog.py   every dataset by name; `build`, behind `pe-research data build`
"""

from pe_research.data.store import DATA_DIR_ENV, data_dir, parse_spec

__all__ = ["DATA_DIR_ENV", "data_dir", "parse_spec"]
