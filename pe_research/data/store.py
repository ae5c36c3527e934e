"""Where built datasets live and how they are named: data dirs, `tfds:` specs, versions on disk.

A built dataset is the tensorflow-datasets layout DATA_DIR/BUILDER/CONFIG/VERSION/ (array_record
files, dataset_info.json). Nothing here imports a builder, so every data module can use it.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

DATA_DIR_ENV = "PE_RESEARCH_DATA_DIR"
"""Environment variable naming the data dir when no option gives one."""
PREFIX = "tfds:"


def data_dir(explicit: str | Path | None = None) -> Path:
    """The data dir: `explicit`, else $PE_RESEARCH_DATA_DIR, else ~/tensorflow_datasets."""
    chosen = explicit or os.environ.get(DATA_DIR_ENV) or Path.home() / "tensorflow_datasets"
    return Path(chosen).expanduser()


@dataclasses.dataclass(frozen=True)
class Spec:
    """A built dataset by name: `tfds:BUILDER/CONFIG`, optionally `:VERSION`."""

    builder: str
    config: str
    version: str | None = None

    def __str__(self) -> str:
        version = f":{self.version}" if self.version else ""
        return f"{PREFIX}{self.builder}/{self.config}{version}"


_SPEC = re.compile(r"tfds:([A-Za-z0-9_]+)/([A-Za-z0-9_.\-]+)(?::(\d+\.\d+\.\d+))?")


def parse_spec(spec: str) -> Spec:
    """Parse `tfds:BUILDER/CONFIG[:VERSION]`; ValueError shows the form and an example."""
    m = _SPEC.fullmatch(spec.strip())
    if not m:
        raise ValueError(
            f"{spec!r} is not a dataset name of the form tfds:BUILDER/CONFIG[:VERSION], for "
            "example tfds:pe_copy/L16; `pe-research data list` shows the builders and configs."
        )
    return Spec(m[1], m[2], m[3])


def is_built(path: Path) -> bool:
    return (Path(path) / "dataset_info.json").exists()


def built_versions(root: Path, builder: str, config: str) -> list[str]:
    """Versions of BUILDER/CONFIG that are fully built under `root` (oldest first)."""
    folder = Path(root) / builder / config
    if not folder.is_dir():
        return []
    found = [p.name for p in folder.iterdir() if re.fullmatch(r"\d+\.\d+\.\d+", p.name)]
    return sorted(
        (v for v in found if is_built(folder / v)), key=lambda v: tuple(map(int, v.split(".")))
    )


def require_built(
    root: Path, spec: Spec, version: str, *, release_notes: str, rebuild: str
) -> Path:
    """The folder of `spec` at `version` under `root`, or an error saying what to do: build it,
    or rebuild it when the folder holds another version (generated differently)."""
    path = Path(root) / spec.builder / spec.config / version
    if is_built(path):
        return path
    name = f"{PREFIX}{spec.builder}/{spec.config}"
    others = built_versions(root, spec.builder, spec.config)
    if others:
        raise ValueError(
            f"{path.parent} holds version {', '.join(others)} of {name}, but this code "
            f"generates version {version} ({release_notes}); the examples differ, so the old "
            f"files are not read. Rebuild with `{rebuild}` (it writes {version} next to the "
            "old version), or evaluate with the pe_research release that built them."
        )
    raise FileNotFoundError(
        f"{name} (version {version}) is not built in {root}: build it with `{rebuild}`, or "
        f"point --data-dir (--eval.data-dir in a run) or ${DATA_DIR_ENV} at the folder that "
        "holds it."
    )


def disk_size(path: Path) -> int:
    """Bytes of all files under `path`."""
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())
