"""Frames -> table rows for the templates: which columns, their headers and formatters.

A table is data (formatted text per cell, CSS classes); the ``table`` macro of
``templates/macros.html`` turns it into markup, escaping every header and cell.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from reports.fmt import fmt_text


@dataclass(frozen=True)
class Link:
    """A cell or list item that links to a relative page of the same report set."""

    text: str
    href: str


@dataclass(frozen=True)
class Column:
    """How one frame column is shown: header text (with its unit) and a formatter
    (value -> text, or a ``Link``)."""

    key: str
    header: str
    fmt: Callable[[Any], str | Link] = fmt_text
    numeric: bool = False
    wrap: bool = False  # names and long ids: break at spaces, hyphens, slashes (inside a word on paper)
    prose: bool = False  # sentences (evidence, recommendations): a wide wrapping column
    words: bool = False  # a list of codes or words: breaks between them, never inside one

    @property
    def css(self) -> str:
        if self.numeric:
            return "num"
        if self.prose or self.words:
            return "text prose" if self.prose else "text words"
        return "text wrap" if self.wrap else "text"


@dataclass(frozen=True)
class Cell:
    text: str
    css: str
    href: str | None = None


@dataclass(frozen=True)
class Row:
    cells: tuple[Cell, ...]
    css: str | None = None


@dataclass(frozen=True)
class Table:
    """Headers and formatted rows; no rows: the template shows its "empty" wording."""

    columns: tuple[Column, ...]
    rows: tuple[Row, ...]


def _cell(value: str | Link, css: str) -> Cell:
    if isinstance(value, Link):
        return Cell(value.text, css, value.href)
    return Cell(value, css)


def table(
    frame: pl.DataFrame,
    columns: Sequence[Column],
    *,
    row_class: Callable[[dict[str, Any]], str | None] | None = None,
) -> Table:
    """The given columns of a frame, each cell formatted by its column."""
    rows = tuple(
        Row(tuple(_cell(col.fmt(row[col.key]), col.css) for col in columns), row_class(row) if row_class else None)
        for row in frame.iter_rows(named=True)
    )
    return Table(tuple(columns), rows)
