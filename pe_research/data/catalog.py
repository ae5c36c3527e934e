"""Every dataset pe_research builds, by name, and `build`: what `pe-research data build` runs."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import time
from pathlib import Path

import tensorflow_datasets as tfds

from pe_research.data import builders, loader, store, text
from pe_research.data import corpus as corpora

BUILDERS: dict[str, type[tfds.core.GeneratorBasedBuilder]] = {
    **builders.TASK_BUILDERS,
    "text": text.TextBuilder,
}
"""Short name (a task's name, or `text`) -> builder."""


def builder_class(name: str) -> type[tfds.core.GeneratorBasedBuilder]:
    """A builder by short name (`copy`, `text`) or tfds name (`pe_copy`, `pe_text`)."""
    for short, cls in BUILDERS.items():
        if name in (short, cls.name):
            return cls
    raise ValueError(f"No dataset {name!r}; choose one of {', '.join(BUILDERS)}.")


@dataclasses.dataclass(frozen=True)
class BuildReport:
    """Where a dataset was built, what it holds and what it cost."""

    spec: str
    path: Path
    examples: dict[str, int]
    bytes_on_disk: int
    seconds: float
    reused: bool

    def __str__(self) -> str:
        counts = ", ".join(f"{split} {n}" for split, n in self.examples.items())
        how = "already built; reused" if self.reused else f"built in {self.seconds:.2f} s"
        return (
            f"{self.spec}: {how}; {counts} examples; "
            f"{self.bytes_on_disk / 1e6:.2f} MB on disk in {self.path}"
        )


def text_config(
    config: str | None, corpus: str | None, validation_fraction: float | None
) -> text.TextConfig:
    """A named text config (`kjv`, `pydoc_topics`), or a new one for the corpus given."""
    named = {c.name: c for c in text.TextBuilder.BUILDER_CONFIGS}
    if corpus is None:
        name = config or "kjv"
        if name not in named:
            raise ValueError(
                f"pe_text has no config {name!r} ({', '.join(named)}); give the file with "
                f"--corpus PATH. {corpora.CORPUS_HELP}"
            )
        corpus = named[name].path
    else:
        stem = "pydoc_topics" if corpus == corpora.BUILTIN else Path(corpus).stem
        name = config or re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("_.-") or "corpus"
    fraction = 0.1 if validation_fraction is None else validation_fraction
    if name in named:
        taken = named[name]
        if (taken.path, taken.validation_fraction) != (corpus, fraction):
            raise ValueError(
                f"pe_text config {name!r} is the named config of {taken.path} with "
                f"validation_fraction {taken.validation_fraction}; name yours with --config NAME."
            )
        return taken
    return text.TextConfig(
        name=name, description=f"bytes of {corpus}", path=corpus, validation_fraction=fraction
    )


def build(
    name: str,
    config: str | tfds.core.BuilderConfig | None = None,
    *,
    data_dir: str | Path | None = None,
    corpus: str | None = None,
    validation_fraction: float | None = None,
    overwrite: bool = False,
) -> BuildReport:
    """Build one dataset config as array_record under the data dir (reused if already built).

    `config` names a config of the builder, or is a config object (from Python: any length grid
    as a builders.TaskConfig, any corpus as a text.TextConfig)."""
    cls = builder_class(name)
    root = store.data_dir(data_dir)
    if isinstance(config, tfds.core.BuilderConfig):
        chosen = config
    elif cls is text.TextBuilder:
        chosen = text_config(config, corpus, validation_fraction)
    else:
        if corpus is not None or validation_fraction is not None:
            raise ValueError("--corpus and --validation-fraction are options of `text` only.")
        if config is None:
            names = ", ".join(c.name for c in cls.BUILDER_CONFIGS)
            raise ValueError(f"Choose a config of {cls.name} with --config: {names}.")
        chosen = builders.config_of(cls, config)
    builder = cls(config=chosen, data_dir=root, file_format="array_record")
    path = Path(builder.data_path)
    spec = f"{store.PREFIX}{cls.name}/{chosen.name}"
    reused = store.is_built(path) and not overwrite
    if reused and cls is text.TextBuilder:
        built = json.loads((path / "metadata.json").read_text())["sha256"]
        if built != hashlib.sha256(builder.corpus).hexdigest():
            raise FileExistsError(
                f"{path} holds {spec} built from another corpus; pass --overwrite to replace "
                "it, or name this one with --config NAME."
            )
    if store.is_built(path) and overwrite:
        shutil.rmtree(path)
    t0 = time.perf_counter()
    if not reused:
        builder.download_and_prepare()
    seconds = time.perf_counter() - t0
    info = tfds.builder_from_directory(path).info
    return BuildReport(
        spec=spec,
        path=path,
        examples={s: info.splits[s].num_examples for s in info.splits},
        bytes_on_disk=store.disk_size(path),
        seconds=round(seconds, 3),
        reused=reused,
    )


def listing(data_dir: str | Path | None = None) -> str:
    """Every builder, its version and configs, marking the configs built in the data dir."""
    root = store.data_dir(data_dir)
    lines = [f"Datasets (version; * = built in {root}):"]
    for short, cls in BUILDERS.items():
        version = str(cls.VERSION)
        configs = [
            c.name + ("*" if store.is_built(root / cls.name / c.name / version) else "")
            for c in cls.BUILDER_CONFIGS
        ]
        lines.append(f"  {short:<14} tfds:{cls.name}/CONFIG ({version}): {' '.join(configs)}")
    lines.append(
        "  (text also builds any file: pe-research data build text --corpus FILE --config NAME)"
    )
    return "\n".join(lines)


def command(
    verb: str,
    name: str | None = None,
    *,
    config: str | None = None,
    data_dir: Path | None = None,
    corpus: str | None = None,
    validation_fraction: float | None = None,
    overwrite: bool = False,
) -> str:
    """`pe-research data VERB [NAME]`: list, build or read datasets; returns what to print."""
    if verb == "list":
        return listing(data_dir)
    if name is None:
        raise ValueError(f"`pe-research data {verb}` needs a name: see `pe-research data list`.")
    if verb == "read":
        return str(loader.read_throughput(name, data_dir))
    if verb != "build":
        raise ValueError(f"unknown data command {verb!r}: use build, list or read.")
    report = build(
        name,
        config,
        data_dir=data_dir,
        corpus=corpus,
        validation_fraction=validation_fraction,
        overwrite=overwrite,
    )
    if report.spec.startswith("tfds:pe_text/"):
        return str(report)
    where = f" --eval.data-dir {data_dir}" if data_dir is not None else ""
    return f"{report}\nEvaluate on it: pe-research train --eval.data {report.spec}{where} ..."
