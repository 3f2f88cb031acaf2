"""Writing rendered reports to the reports directory, atomically."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from reports.paths import DEPARTMENTS_DIR, REVIEW_FILE

_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")
_PAGE = re.compile(r"[a-z0-9][a-z0-9_-]*\.html")


def _month_dir(reports_dir: Path, month: str) -> Path:
    if not _MONTH.fullmatch(month):
        raise ValueError(f"month must be YYYY-MM, got {month!r}")
    return Path(reports_dir) / month


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


def write_review(html: str, reports_dir: Path, month: str) -> Path:
    """Write ``<reports_dir>/YYYY-MM/review.html`` and return its path."""
    return write_atomic(html, _month_dir(reports_dir, month) / REVIEW_FILE)


def write_department_pages(pages: Mapping[str, str], reports_dir: Path, month: str) -> list[Path]:
    """Write ``<reports_dir>/YYYY-MM/departments/<name>.html`` for each page and remove the
    pages of departments that are no longer in the month (a rerun replaces the set).

    Only ``*.html`` files are removed from that directory; other files are left alone.
    """
    target_dir = _month_dir(reports_dir, month) / DEPARTMENTS_DIR
    for name in pages:
        if not _PAGE.fullmatch(name):
            raise ValueError(f"unsafe department page name {name!r}")
    written = [write_atomic(html, target_dir / name) for name, html in sorted(pages.items())]
    if target_dir.is_dir():
        for stale in target_dir.glob("*.html"):
            if stale.name not in pages:
                stale.unlink()
    return written
