"""File names of the pages of one month: ``review.html`` and ``departments/<dept>.html``."""

from __future__ import annotations

import hashlib
import re

REVIEW_FILE = "review.html"
DEPARTMENTS_DIR = "departments"
REVIEW_DEPTH = 1  # folders between the reports folder and a review: YYYY-MM/
DEPARTMENT_DEPTH = 2  # YYYY-MM/departments/
_SAFE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def department_file_name(department: str) -> str:
    """A safe, stable file name for a department's page.

    Department ids are config identifiers (``[a-z0-9][a-z0-9_-]*``) and keep their name;
    anything else (a name straight from data) becomes its safe characters plus a short
    hash, so no name can leave the directory or collide with another.
    """
    if _SAFE.fullmatch(department):
        return f"{department}.html"
    digest = hashlib.sha256(department.encode("utf-8")).hexdigest()[:10]
    stem = re.sub(r"[^a-z0-9_-]+", "-", department.lower()).strip("-_")[:40] or "department"
    return f"{stem}-{digest}.html"


def department_href(department: str) -> str:
    """Link from review.html to a department page (relative: the set works offline)."""
    return f"{DEPARTMENTS_DIR}/{department_file_name(department)}"
