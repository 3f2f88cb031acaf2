"""Page shell for cardhours reports: escaping, number formatting, tables, sections.

Every fragment that goes into a page is an ``Html`` string. Only the helpers in this
module create ``Html``, and each escapes whatever data it is given, so a ``Section``
body cannot carry an unescaped user string by accident (job names, users, accounts,
department and cluster names are all user-controlled).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import plotly.graph_objects as go
import polars as pl
from plotly.offline import get_plotlyjs

NA = "n/a"
FIGURE_CONFIG = {"displaylogo": False, "responsive": True}


class Html(str):
    """A fragment of markup that is safe to place in a page as it is."""


def esc(value: Any) -> Html:
    """Escape a value for HTML text or a quoted attribute value."""
    return Html(html.escape(str(value), quote=True))


def esc_plotly(value: Any) -> str:
    """Escape a data string for plotly text, hover and tick labels.

    Plotly renders a subset of HTML in labels and decodes only a few entities
    (``&amp;``, ``&lt;``, ``&gt;``, numeric), so only ``<``, ``>`` and ``&`` are escaped.
    """
    return html.escape(str(value), quote=False)


def join(parts: Iterable[Html]) -> Html:
    return Html("".join(parts))


def tag(name: str, text: Any, **attrs: str) -> Html:
    """One element whose content is escaped text. Attribute values are escaped too."""
    rendered = "".join(f' {key.rstrip("_")}="{esc(value)}"' for key, value in attrs.items())
    return Html(f"<{name}{rendered}>{esc(text)}</{name}>")


def paragraph(text: str, **attrs: str) -> Html:
    return tag("p", text, **attrs)


# -- number formatting (value -> plain text; escaping happens where it is placed) --


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def fmt_text(value: Any) -> str:
    return NA if value is None else str(value)


def fmt_int(value: Any) -> str:
    return NA if _missing(value) else f"{round(value):,}"


def fmt_float(value: Any, decimals: int = 1) -> str:
    return NA if _missing(value) else f"{value:,.{decimals}f}"


def fmt_trimmed(value: Any, decimals: int = 2) -> str:
    """1.0 -> "1", 0.375 -> "0.38": for counts that may be fractional (MIG GPUs)."""
    if _missing(value):
        return NA
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def fmt_pct(ratio: Any, decimals: int = 1) -> str:
    """A 0-1 ratio as a percentage."""
    return NA if _missing(ratio) else f"{ratio * 100:,.{decimals}f}%"


def fmt_minutes(seconds: Any) -> str:
    return NA if _missing(seconds) else f"{seconds / 60:,.1f}"


def fmt_datetime(value: datetime | None) -> str:
    return NA if value is None else value.strftime("%Y-%m-%d %H:%M")


# -- tables --


@dataclass(frozen=True)
class Column:
    """How one frame column is shown: header text (with its unit) and a formatter."""

    key: str
    header: str
    fmt: Callable[[Any], str] = fmt_text
    numeric: bool = False
    wrap: bool = False  # free text (names) may break anywhere; ids, times, numbers never

    @property
    def css(self) -> str:
        return "num" if self.numeric else "text wrap" if self.wrap else "text"


def render_table(
    frame: pl.DataFrame,
    columns: Sequence[Column],
    *,
    row_class: Callable[[dict[str, Any]], str | None] | None = None,
    empty: str = "No rows.",
) -> Html:
    """Render the given columns of a frame; every cell and header is escaped."""
    if frame.is_empty():
        return paragraph(empty, class_="empty")
    head = join(
        tag("th", col.header, class_=col.css, scope="col")
        for col in columns
    )
    rows = []
    for row in frame.iter_rows(named=True):
        cells = join(
            tag("td", col.fmt(row[col.key]), class_=col.css)
            for col in columns
        )
        css = row_class(row) if row_class else None
        rows.append(Html(f'<tr class="{esc(css)}">{cells}</tr>' if css else f"<tr>{cells}</tr>"))
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{join(rows)}</tbody></table>"
    return Html(f'<div class="table-wrap">{table}</div>')


# -- figures --


def figure_html(fig: go.Figure, div_id: str) -> Html:
    """A figure as a <div> plus its Plotly.newPlot call; plotly.js comes from the page."""
    fragment = fig.to_html(
        full_html=False, include_plotlyjs=False, config=FIGURE_CONFIG, div_id=div_id
    )
    return Html(f'<div class="figure">{fragment}</div>')


# -- sections and page --


@dataclass(frozen=True)
class Section:
    """One block of a report page: an anchor id, a heading and a body of safe markup."""

    id: str
    title: str
    body: Html
    css_class: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.body, Html):
            raise TypeError("Section.body must be Html built by reports.html helpers")

    def render(self) -> Html:
        classes = " ".join(filter(None, ["block", self.css_class]))
        heading = tag("h2", self.title)
        return Html(
            f'<section id="{esc(self.id)}" class="{esc(classes)}">{heading}{self.body}</section>'
        )


def _plotlyjs() -> str:
    bundle = get_plotlyjs()
    if "</script" in bundle.lower():  # would end the inline <script> early
        raise ValueError("plotly.js bundle contains '</script' and cannot be inlined")
    return bundle


def render_page(title: str, subtitle: str, sections: Sequence[Section]) -> Html:
    """A complete, self-contained HTML document: inline CSS and plotly.js, no network."""
    nav = join(
        Html(f'<li><a href="#{esc(s.id)}">{esc(s.title)}</a></li>') for s in sections
    )
    body = join(s.render() for s in sections)
    return Html(
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{PAGE_CSS}</style>"
        "<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>"
        f"<script>{_plotlyjs()}</script>"
        f"</head><body><header>{tag('h1', title)}{paragraph(subtitle, class_='subtitle')}"
        f'<nav><ul>{nav}</ul></nav></header><main>{body}</main></body></html>\n'
    )


PAGE_CSS = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
  color: #1b1f24; background: #fff; margin: 0 auto; max-width: 1280px; padding: 1.5rem;
  line-height: 1.45; font-size: 15px; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.25rem; border-bottom: 2px solid #d0d7de; padding-bottom: .2rem; }
.subtitle { color: #57606a; margin: 0 0 .75rem; }
nav ul { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .25rem 1rem; }
nav a { color: #0b5cad; }
section.block { margin: 2rem 0; }
table { border-collapse: collapse; width: 100%; font-size: .85rem; margin: .5rem 0 1rem; }
th, td { border-bottom: 1px solid #d8dee4; padding: .3rem .45rem; vertical-align: top; }
th { background: #f3f5f7; text-align: left; }
.table-wrap { overflow-x: auto; }
td.text { white-space: nowrap; }
td.wrap { white-space: normal; overflow-wrap: anywhere; min-width: 5rem; max-width: 16rem; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
tr.needs-mapping td { background: #fff4cc; font-weight: 600; }
.empty, .notice { background: #f6f8fa; border-left: 4px solid #8c959f; padding: .5rem .75rem; }
.caption { color: #57606a; font-size: .85rem; }
section.block.compact { margin: 1rem 0; }
.note { background: #f3f8ff; border-left: 4px solid #0b5cad; padding: .5rem .9rem; }
.figure { width: 720px; max-width: 100%; overflow-x: auto; }
@media print {
  @page { size: A4 landscape; margin: 10mm; }
  body { max-width: none; padding: 0; font-size: 10pt; background: #fff; color: #000; }
  nav { display: none; }
  section.block { margin: 0; }
  section.block + section.block { break-before: page; }
  section.block + section.block.compact { break-before: auto; }
  h2 { break-after: avoid; }
  table { font-size: 8pt; }
  .table-wrap { overflow: visible; }
  thead { display: table-header-group; }
  tr { break-inside: avoid; }
  th, .note, .empty, .notice, tr.needs-mapping td { background: #fff !important; }
  tr.needs-mapping td { border-top: 1.5px solid #000; border-bottom: 1.5px solid #000; }
  .figure { width: 720px; max-width: none; overflow: visible; break-inside: avoid; }
  .modebar-container { display: none !important; }
}
"""
