"""Writing rendered reports to the reports directory, atomically, each with the shared
plotly.js its figures load (``reports/plotly_asset.py``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from reports.atomic import write_atomic, write_atomic_with
from reports.paths import DEPARTMENTS_DIR, REVIEW_FILE
from reports.plotly_asset import write_plotly_js

__all__ = ["write_atomic", "write_atomic_with", "write_department_pages", "write_review"]

_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")
_PAGE = re.compile(r"[a-z0-9][a-z0-9_-]*\.html")


def _month_dir(reports_dir: Path, month: str) -> Path:
    if not _MONTH.fullmatch(month):
        raise ValueError(f"month must be YYYY-MM, got {month!r}")
    return Path(reports_dir) / month


def write_review(html: str, reports_dir: Path, month: str) -> Path:
    """Write ``<reports_dir>/YYYY-MM/review.html`` (and the shared plotly.js, when missing or
    different) and return its path."""
    folder = _month_dir(reports_dir, month)
    write_plotly_js(reports_dir)
    return write_atomic(html, folder / REVIEW_FILE)


def write_department_pages(pages: Mapping[str, str], reports_dir: Path, month: str) -> list[Path]:
    """Write ``<reports_dir>/YYYY-MM/departments/<name>.html`` for each page and remove the
    pages of departments that are no longer in the month (a rerun replaces the set).

    Only ``*.html`` files are removed from that directory; other files are left alone. The
    shared plotly.js is written first, when missing or different.
    """
    target_dir = _month_dir(reports_dir, month) / DEPARTMENTS_DIR
    for name in pages:
        if not _PAGE.fullmatch(name):
            raise ValueError(f"unsafe department page name {name!r}")
    write_plotly_js(reports_dir)
    written = [write_atomic(html, target_dir / name) for name, html in sorted(pages.items())]
    if target_dir.is_dir():
        for stale in target_dir.glob("*.html"):
            if stale.name not in pages:
                stale.unlink()
    return written
