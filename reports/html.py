"""Page shell for cardhours reports: sections, figures and the page (plotly.js by relative path).

Markup lives in the Jinja2 templates of ``reports/templates`` (autoescaping on); Python hands
them values. A section is an anchor id, a heading and the template of its body with its
values; strings among the values are escaped where the template places them (job names,
users, accounts, department and cluster names are all user-controlled). The only markup made
here is a plotly figure (its data strings escaped by ``esc_plotly``) and rendered templates.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from markupsafe import Markup

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
from reports.plotly_asset import plotly_js_href
from reports.tables import Column, Link, Table, table
from reports.templating import render

__all__ = [
    "NA",
    "Column",
    "Link",
    "Section",
    "Table",
    "esc_plotly",
    "figure_html",
    "fmt_datetime",
    "fmt_float",
    "fmt_int",
    "fmt_minutes",
    "fmt_pct",
    "fmt_text",
    "fmt_trimmed",
    "render_page",
    "table",
]

FIGURE_CONFIG = {"displaylogo": False, "responsive": True}


def esc_plotly(value: Any) -> str:
    """Escape a data string for plotly text, hover and tick labels.

    Plotly renders a subset of HTML in labels and decodes only a few entities
    (``&amp;``, ``&lt;``, ``&gt;``, numeric), so only ``<``, ``>`` and ``&`` are escaped.
    """
    return html.escape(str(value), quote=False)


def figure_html(fig: go.Figure, div_id: str) -> Markup:
    """A figure as a <div> plus its Plotly.newPlot call; plotly.js comes from the page."""
    return Markup(fig.to_html(full_html=False, include_plotlyjs=False, config=FIGURE_CONFIG, div_id=div_id))


@dataclass(frozen=True)
class Section:
    """One block of a report page: an anchor id, a heading, and the template (a name under
    ``reports/templates``) that renders its body from ``values``."""

    id: str
    title: str
    template: str
    values: Mapping[str, Any] = field(default_factory=dict)
    css_class: str = ""

    @property
    def classes(self) -> str:
        return " ".join(filter(None, ["block", self.css_class]))

    def render_body(self, templates_dir: Path | None = None) -> Markup:
        return render(self.template, templates_dir, **self.values)

    def render(self, templates_dir: Path | None = None) -> Markup:
        """The whole ``<section>``: heading and body."""
        return render("section.html", templates_dir, section=self, body=self.render_body(templates_dir))


def render_page(
    template: str, sections: Sequence[Section], templates_dir: Path | None = None, *, depth: int, **values: Any
) -> str:
    """A complete HTML document from a page template (``review.html``, ``department.html``), its
    sections and its ``values``: CSS inline, plotly.js loaded from the reports folder's shared
    copy by a relative path (``depth``: how many folders below the reports folder the page is),
    nothing from the network."""
    for section in sections:
        if not isinstance(section, Section):
            raise TypeError(f"sections must be reports.html.Section, got {type(section).__name__}")
    rendered = [(s, s.render(templates_dir)) for s in sections]
    plotly_src = plotly_js_href(depth)
    return str(render(template, templates_dir, sections=rendered, plotly_src=plotly_src, **values)) + "\n"
