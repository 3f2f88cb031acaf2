"""Page shell for cardhours reports: escaping, number formatting, tables, sections.

Every fragment that goes into a page is an ``Html`` string. Only the helpers in this
module create ``Html``, and each escapes whatever data it is given, so a ``Section``
body cannot carry an unescaped user string by accident (job names, users, accounts,
department and cluster names are all user-controlled).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
import polars as pl
from plotly.offline import get_plotlyjs

from reports.fmt import (  # re-exported: the sections import them from here
    NA,
    fmt_datetime,
    fmt_float,
    fmt_int,
    fmt_minutes,
    fmt_pct,
    fmt_text,
    fmt_trimmed,
)
from reports.style import PAGE_CSS

__all__ = [
    "NA", "Column", "Html", "Section", "cell", "esc", "esc_plotly", "figure_html", "fmt_datetime",
    "fmt_float", "fmt_int", "fmt_minutes", "fmt_pct", "fmt_text", "fmt_trimmed", "join", "link",
    "paragraph", "render_page", "render_table", "tag",
]  # fmt: skip

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


def link(text: Any, href: str) -> Html:
    """An ``<a>`` to a relative page of the same report set (text and href escaped)."""
    return tag("a", text, href=href)


def cell(value: Any) -> Html:
    """Table cell content: ``Html`` from these helpers as it is, anything else escaped."""
    return value if isinstance(value, Html) else esc(value)


# -- tables --


@dataclass(frozen=True)
class Column:
    """How one frame column is shown: header text (with its unit) and a formatter."""

    key: str
    header: str
    fmt: Callable[[Any], str] = fmt_text
    numeric: bool = False
    wrap: bool = False  # free text (names) may break anywhere; ids, times, numbers never
    prose: bool = False  # sentences (evidence, recommendations): a wide wrapping column
    words: bool = False  # a list of codes or words: breaks between them, never inside one

    @property
    def css(self) -> str:
        if self.numeric:
            return "num"
        if self.prose or self.words:
            return "text prose" if self.prose else "text words"
        return "text wrap" if self.wrap else "text"


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
            Html(f'<td class="{esc(col.css)}">{cell(col.fmt(row[col.key]))}</td>')
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


def render_page(
    title: str, subtitle: str, sections: Sequence[Section], links: Sequence[Html] = ()
) -> Html:
    """A complete, self-contained HTML document: inline CSS and plotly.js, no network.

    ``links`` go before the section index (e.g. back to the review from a department page).
    """
    nav = join(
        [Html(f"<li>{a}</li>") for a in links]
        + [Html(f'<li><a href="#{esc(s.id)}">{esc(s.title)}</a></li>') for s in sections]
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
