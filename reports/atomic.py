"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomic_with(target: Path, write: Callable[[Path], None]) -> Path:
    """Have ``write`` fill a temporary file in ``target``'s directory, fsync it, then
    ``os.replace`` it onto ``target``: a reader sees the old file or the new one, never half
    of one; a failed write keeps the old one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp_name))
        with open(tmp_name, "rb") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target


def write_atomic(text: str, target: Path) -> Path:
    """``write_atomic_with`` for a text file (UTF-8, newlines as given)."""
    return write_atomic_with(target, lambda path: path.write_text(text, encoding="utf-8", newline=""))
