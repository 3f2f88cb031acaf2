"""``<reports dir>/index.html``: every month the folder holds, newest first, with its review,
its department pages and its other files (the exports), each with its size.

The list is read from the folder, not from a list of expected names: a month is a ``YYYY-MM``
folder; its review is ``review.html``, its department pages ``departments/*.html``, and every
other file in it (hidden files and temporary files of an atomic write left out) is an export,
whatever wrote it. A file named in the month's ``MANIFEST.sha256`` (a closed month) says so.
Links are relative, so the index works from disk and in a copy of the whole folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from reports.atomic import write_atomic
from reports.manifest import MANIFEST
from reports.paths import DEPARTMENTS_DIR, REVIEW_FILE
from reports.templating import render

INDEX_FILE = "index.html"
_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")
_MANIFEST_LINE = re.compile(r"[0-9a-f]{64}  (.+)")
SEALED_NOTE = f"SHA-256 in {MANIFEST}"


@dataclass(frozen=True)
class ArchiveFile:
    """One file of a month: its label, its link (relative to the reports folder), its size."""

    text: str
    href: str
    bytes: int
    note: str = ""

    @property
    def size(self) -> str:
        return fmt_size(self.bytes)


@dataclass(frozen=True)
class ArchiveMonth:
    month: str  # YYYY-MM
    review: ArchiveFile | None
    departments: tuple[ArchiveFile, ...]
    exports: tuple[ArchiveFile, ...]


def fmt_size(size: int) -> str:
    """``734 B``, ``12.3 kB``, ``4.7 MB`` (powers of 1000)."""
    if size < 1000:
        return f"{size} B"
    for unit in ("kB", "MB", "GB"):
        size /= 1000
        if size < 1000 or unit == "GB":
            return f"{size:.1f} {unit}"
    raise AssertionError("unreachable")


def _visible(path: Path, folder: Path) -> bool:
    return path.is_file() and not any(part.startswith(".") for part in path.relative_to(folder).parts)


def _entry(path: Path, root: Path, text: str, note: str = "") -> ArchiveFile:
    return ArchiveFile(text, quote(path.relative_to(root).as_posix()), path.stat().st_size, note)


def sealed_names(folder: Path) -> frozenset[str]:
    """The file names ``folder/MANIFEST.sha256`` lists (none without one)."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return frozenset()
    lines = manifest.read_text(encoding="utf-8").splitlines()
    return frozenset(m.group(1) for m in map(_MANIFEST_LINE.fullmatch, lines) if m)


def scan_month(root: Path, month: str) -> ArchiveMonth:
    """The files of ``root/<month>``."""
    folder = root / month
    files = sorted(p for p in folder.rglob("*") if _visible(p, folder))
    review = folder / REVIEW_FILE
    pages = [p for p in files if p.parent == folder / DEPARTMENTS_DIR and p.suffix == ".html"]
    exports = [p for p in files if p != review and p not in pages]
    sealed = {folder / name for name in sealed_names(folder)}
    return ArchiveMonth(
        month,
        _entry(review, root, "monthly review") if review in files else None,
        tuple(_entry(p, root, p.stem) for p in pages),
        tuple(_entry(p, root, p.relative_to(folder).as_posix(), SEALED_NOTE if p in sealed else "") for p in exports),
    )


def scan_archive(root: Path) -> list[ArchiveMonth]:
    """Every ``YYYY-MM`` folder of the reports folder, newest first."""
    if not Path(root).is_dir():
        return []
    months = sorted((p.name for p in Path(root).iterdir() if p.is_dir() and _MONTH.fullmatch(p.name)), reverse=True)
    return [scan_month(Path(root), month) for month in months]


def render_index(months: list[ArchiveMonth], templates_dir: Path | None = None) -> str:
    """The index page (template ``index.html``; every string escaped)."""
    links = [{"text": m.month, "href": f"#month-{m.month}"} for m in months]
    return str(render(INDEX_FILE, templates_dir, months=months, links=links)) + "\n"


def write_index(reports_dir: Path, templates_dir: Path | None = None) -> Path:
    """Write ``<reports_dir>/index.html`` from what the folder holds now; returns its path."""
    root = Path(reports_dir)
    return write_atomic(render_index(scan_archive(root), templates_dir), root / INDEX_FILE)
