"""The reports folder as people browse it, in headless Chromium: copied elsewhere as a whole,
index.html opened from disk, a link followed to a department page whose figures are drawn by
the folder's one shared plotly.js, with no request leaving the folder and no console errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reports import (
    ReviewSettings,
    build_inputs,
    render_department_pages,
    render_review,
    write_department_pages,
    write_review,
)
from reports.archive_index import write_index
from reports.plotly_asset import plotly_js_name
from tests.integration.test_review_browser import MODELS, MONTH, demo_month
from tests.support.browser import load_page

pytestmark = [pytest.mark.integration]


def test_index_to_department_page_offline_from_a_copied_folder(tmp_path: Path) -> None:
    built = tmp_path / "built"
    settings = ReviewSettings(currency="EUR", prices=MODELS)
    inputs = build_inputs(MONTH, "demo-like month", settings=settings, **demo_month())
    write_review(render_review(inputs), built, "2026-10")
    write_department_pages(render_department_pages(inputs), built, "2026-10")
    (built / "2026-10" / "chargeback_focus.csv").write_text("BilledCost\n1.00\n")
    write_index(built)
    copy = tmp_path / "elsewhere" / "reports"
    shutil.copytree(built, copy)
    shutil.rmtree(built)  # nothing may point back at where it was written

    shots = tmp_path / "screenshots"
    shots.mkdir()
    index = load_page(copy / "index.html", shots / "index.png")
    assert index.console_errors == [] and index.page_errors == []
    assert "2026-10" in index.text and "chargeback_focus.csv" in index.text and "vision" in index.text
    assert [url for url in index.requests if not url.startswith("file:")] == []

    page = load_page(copy / "index.html", shots / "vision.png", follow="2026-10/departments/vision.html")
    assert page.url == (copy / "2026-10" / "departments" / "vision.html").as_uri()
    assert page.console_errors == [] and page.page_errors == [] and page.dialogs == []
    assert [url for url in page.requests if not url.startswith("file:")] == []  # offline
    plotly = (copy / "assets" / plotly_js_name()).as_uri()
    assert plotly in page.requests  # the folder's shared copy, by its relative path
    assert page.plots_rendered == 2  # the department's trend and its utilization histogram
    assert "GPU use of vision, 2026-10" in page.text
    assert page.screenshot is not None and page.screenshot.stat().st_size > 20_000
