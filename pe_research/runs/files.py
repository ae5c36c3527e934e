"""Files of a run written so that a crash never leaves half of one: atomic whole-file writes,
JSONL rows, and errors that say which file could not be written and what to do.

Whole files are written to a temporary name and renamed; the append-only metrics file is the
exception, and `read_jsonl` skips a torn last line.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def umask() -> int:
    """The process's file mode creation mask, read without changing it where the system allows
    (Linux: /proc/self/status), since os.umask can only be read by setting it, which races with
    other threads creating files."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temp_file(folder: Path, prefix: str) -> tuple[int, str]:
    """A new temporary file in `folder` for a file that will be renamed into place: (fd, path).

    tempfile.mkstemp creates it readable by its owner only (0600), and a rename keeps that mode,
    so the file is given the mode any file this program creates gets (0666 less the umask):
    collaborators on a shared file system can read the results.
    """
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~umask())
    except BaseException:
        os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise
    return fd, tmp


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the whole new one.

    OSError (a full disk, an unwritable folder) leaves `path` as it was and names what to do.
    """
    path = Path(path)
    try:
        fd, tmp = temp_file(path.parent, f".{path.name}.")
    except OSError as e:
        raise write_error(path, e) from None
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise write_error(path, e) from None
        raise


class WriteError(OSError):
    """A file of a run could not be written; the message says which and what to do."""


def write_error(path: Path, e: OSError) -> WriteError:
    """`e`, reworded to say which file could not be written and what to do about it."""
    if isinstance(e, WriteError):
        return e
    if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        advice = "free some space (or raise the quota) or write to another folder with --out"
    elif e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        advice = "choose a folder you can write to with --out, or fix its permissions"
    else:
        advice = "check that the output folder (--out) can be created and written"
    unchanged = f"; {path} is unchanged" if path.is_file() else ""
    return WriteError(e.errno, f"could not write {path} ({e.strerror or e}): {advice}{unchanged}.")


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    write_atomic(path, "".join(json.dumps(row) + "\n" for row in rows))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a torn last line (a crash mid-append) is skipped with a warning."""
    rows = []
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                msg = (
                    f"{path}: skipped a torn last line (interrupted write); the {len(rows)} rows "
                    "before it are read."
                )
                warnings.warn(msg, stacklevel=2)
                continue
            raise ValueError(
                f"{path}:{i + 1} is not valid JSON and is not the last line, so it is not an "
                f"interrupted write but a damaged file: delete {path.parent} and rerun it."
            ) from None
    return rows
