"""Pure reports: marts (polars frames) -> plotly figures -> one self-contained HTML page."""

from reports.review import render_review
from reports.write import write_review

__all__ = ["render_review", "write_review"]
