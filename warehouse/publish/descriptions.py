"""Column descriptions of the public tables, from docs/marts.md: the one place they are written
(tests/unit/test_docs_marts.py keeps its column lists equal to the code's). Used as PostgreSQL
column comments, which Metabase and Superset show beside the columns. Without the page (an
installation without the source tree's docs/) the columns have no comment."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

MARTS_DOC = Path(__file__).resolve().parents[2] / "docs" / "marts.md"
_ROW = re.compile(r"^\| ([a-z_0-9]+) \| ([^|]*) \| (.*) \|\s*$")


def column_descriptions(table: str, doc: Path = MARTS_DOC) -> dict[str, str]:
    """column -> meaning of the ``## table`` section's column table (empty when not documented)."""
    return dict(_sections(doc).get(table, {}))


@cache
def _sections(doc: Path) -> dict[str, tuple[tuple[str, str], ...]]:
    if not doc.is_file():
        return {}
    found: dict[str, tuple[tuple[str, str], ...]] = {}
    for section in doc.read_text(encoding="utf-8").split("\n## ")[1:]:
        title, _, body = section.partition("\n")
        rows = []
        for line in body.splitlines():
            match = _ROW.match(line)
            if match and match.group(1) != "column":
                rows.append((match.group(1), match.group(3).strip()))
        if rows and title.strip() not in found:
            found[title.strip()] = tuple(rows)
    return found
