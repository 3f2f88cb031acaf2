"""Writing a rendered report to the reports directory, atomically."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")


def write_review(html: str, reports_dir: Path, month: str) -> Path:
    """Write ``<reports_dir>/YYYY-MM/review.html`` and return its path.

    The page goes to a temporary file in the same directory first and is then moved
    over the old one with ``os.replace``: a reader sees the old page or the new one,
    never half of one, and a failed write leaves the old page in place.
    """
    if not _MONTH.fullmatch(month):
        raise ValueError(f"month must be YYYY-MM, got {month!r}")
    target_dir = Path(reports_dir) / month
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / "review.html"
    fd, tmp_name = tempfile.mkstemp(dir=target_dir, prefix=".review.", suffix=".html.tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(html)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target
