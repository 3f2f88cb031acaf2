"""Pure reports: marts (polars frames) -> plotly figures -> HTML pages (plotly.js shared per reports folder)."""

from reports.data import ReviewInputs, ReviewSettings, build_inputs
from reports.department_page import render_department_pages
from reports.review import render_review
from reports.write import write_department_pages, write_review

__all__ = [
    "ReviewInputs",
    "ReviewSettings",
    "build_inputs",
    "render_department_pages",
    "render_review",
    "write_department_pages",
    "write_review",
]
