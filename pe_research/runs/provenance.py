"""Provenance: which code and machine produced a run (package version, the last git commit that
changed the package's source and whether it had uncommitted changes, jax/flax versions, device
kinds).

`code_version` condenses it to one line; summaries refuse to average runs of different code.
"""

from __future__ import annotations

import functools
import hashlib
import platform
import subprocess
from pathlib import Path
from typing import Any

import flax
import jax
import jaxlib
import optax

from pe_research import __version__


def _git(*args: str, cwd: Path) -> str | None:
    """stdout of a git command, or None where git or a repository is not available."""
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


@functools.cache
def source_revision() -> dict[str, Any]:
    """The last git commit that changed this package's source (pe_research/), and whether the
    package has uncommitted changes (with a hash of them, so two dirty trees can be told apart);
    {} if the package is not a tracked part of a git checkout (an installed wheel). Commits that
    touch only docs, experiments or tests leave it as it was, so a sweep resumed after them is
    still one code version (an experiment's settings are in each run's config). Computed once
    per process: a process runs the code it imported, whatever happens to the files later."""
    return folder_revision(Path(__file__).resolve().parents[1])  # pe_research/


def folder_revision(package: Path) -> dict[str, Any]:
    """`source_revision` of any folder tracked by git (with an __init__.py)."""
    if _git("ls-files", "--error-unmatch", "__init__.py", cwd=package) is None:
        return {}
    # In a shallow clone whose history stops after the package's last change, this names the
    # oldest commit it has: the same code may then read as two versions, never two codes as one.
    commit = _git("log", "-1", "--format=%H", "HEAD", "--", ".", cwd=package)
    if not commit:  # git printed nothing: fall back to HEAD
        commit = _git("rev-parse", "HEAD", cwd=package)
    if commit is None:
        return {}
    diff = _git("diff", "HEAD", "--", ".", cwd=package) or ""
    untracked = (_git("ls-files", "--others", "--exclude-standard", cwd=package) or "").split()
    digest = hashlib.sha256(diff.encode())
    for name in sorted(untracked):
        try:
            digest.update(name.encode() + (package / name).read_bytes())
        except OSError:  # removed since git listed it
            continue
    revision: dict[str, Any] = {"git_commit": commit.strip(), "git_dirty": bool(diff or untracked)}
    if revision["git_dirty"]:
        revision["git_changes_sha256"] = digest.hexdigest()[:12]
    return revision


def versions() -> dict[str, Any]:
    """What config.json records about the code and the machine that produced a run."""
    devices = jax.devices()
    return {
        "pe_research": __version__,
        **source_revision(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "flax": flax.__version__,
        "optax": optax.__version__,
        "python": platform.python_version(),
        "platform": devices[0].platform,
        "device": devices[0].device_kind,
        "device_kinds": sorted({d.device_kind for d in devices}),
        "device_count": len(devices),
    }


def code_version(recorded: dict[str, Any]) -> str:
    """One line naming the code of a run from its recorded `versions` (package version, git
    commit and uncommitted changes, jax and flax versions; the device is not code): runs with
    different lines ran different code."""
    commit = recorded.get("git_commit")
    git = "git unknown" if commit is None else f"git {commit[:12]}"
    if recorded.get("git_dirty"):
        git += f" + uncommitted changes {recorded.get('git_changes_sha256', '?')}"
    return (
        f"pe_research {recorded.get('pe_research', '?')}, {git}, "
        f"jax {recorded.get('jax', '?')}, flax {recorded.get('flax', '?')}"
    )
