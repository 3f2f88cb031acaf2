"""Tests for reports/: the review page as a whole, its shell, figures and writer."""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl
import pytest
from markupsafe import escape as esc

from reports import atomic as write_module
from reports import figures as figures_module
from reports import render_review, write_review
from reports.figures import department_hours_figure, utilization_bins
from reports.html import Column, Section, fmt_pct, table
from reports.review import CLOSING_BLOCKS, REVIEW_BLOCKS
from reports.sections.headline import headline_section
from tests.unit.reports_frames import (
    BUNDLE,
    EVIL_ACCOUNT,
    EVIL_CLUSTER,
    EVIL_DEPT,
    EVIL_JOB,
    EVIL_USER,
    MONTH,
    PLOTLY_SCRIPT,
    clusters_frame,
    departments_frame,
    figure_json,
    jobs_frame,
    loads_shared_plotly,
    make_inputs,
    section,
    section_ids,
)

FIGURES = (
    "fig-trend-shares",
    "fig-trend-hours",
    "fig-department-hours",
    "fig-utilization",
    "fig-hour-of-day",
    "fig-weekday-hour",
)


@pytest.fixture(scope="module")
def page() -> str:
    return render_review(make_inputs())


def test_page_is_one_document_loading_the_shared_plotlyjs_before_its_figures(page: str) -> None:
    assert BUNDLE[:200] not in page  # the bundle's banner with the plotly.js version: not inlined
    assert page.startswith("<!DOCTYPE html>")
    rest = loads_shared_plotly(page)
    assert rest.count("<html") == 1 and rest.count("</html>") == 1
    script = PLOTLY_SCRIPT.search(page)
    assert script.group(1) == "../"  # YYYY-MM/review.html -> assets/ of the reports folder
    before, after = page[: script.start()], page[script.end() :]
    assert "Plotly.newPlot" not in before
    assert after.count("Plotly.newPlot(") == len(FIGURES)
    for div_id in FIGURES:
        figure_json(page, div_id)


def test_every_block_is_on_the_page_and_how_to_read_comes_last(page: str) -> None:
    ids = section_ids(page)
    for expected in (
        "headline",
        "department-index",
        "trends",
        "department-chart",
        "departments",
        "quotas",
        "low-efficiency-departments",
        "top-flagged-jobs",
        "top-users",
        "utilization",
        "time-profile",
        "partitions",
        "gpu-models",
        "top-idle-jobs",
        "users",
        "coverage",
    ):
        assert expected in ids
    assert ids[-1] == "how-to-read" and "no-jobs" not in ids


def test_page_loads_no_external_resources_and_links_only_its_own_pages(page: str) -> None:
    loading = r"<(script|img|iframe|embed|source|audio|video|input)\b[^>]*\bsrc\s*="
    assert not re.search(loading, PLOTLY_SCRIPT.sub("", page), flags=re.I)  # only the shared plotly.js
    assert not re.search(r"<link\b", page, flags=re.I)
    assert not re.search(r"@import|url\(\s*['\"]?(https?:)?//", page, flags=re.I)
    rest = loads_shared_plotly(page)
    assert "http://" not in rest and "https://" not in rest
    hrefs = re.findall(r'href="([^"]*)"', rest)
    pages = [h for h in hrefs if not h.startswith("#")]
    assert pages and all(re.fullmatch(r"departments/[a-z0-9][a-z0-9_-]*\.html", h) for h in pages)


def test_user_strings_are_escaped_in_every_table(page: str) -> None:
    rest = loads_shared_plotly(page)
    for raw in (EVIL_JOB, "<script>alert(1)", EVIL_DEPT, "<i>2</i>", EVIL_USER, EVIL_ACCOUNT, "<b>check</b>"):
        assert raw not in rest
    scripts = re.findall(r"<script[^>]*>(.{0,40})", rest, flags=re.S)
    assert all(
        body.startswith(("window.PlotlyConfig", "</script>", "\n", "                window.PLOTLYENV"))
        for body in scripts
    ), scripts
    expected = {
        "top-idle-jobs": [EVIL_JOB, EVIL_USER, EVIL_ACCOUNT, EVIL_DEPT],
        "top-flagged-jobs": [EVIL_JOB, EVIL_USER, EVIL_DEPT, "<b>check</b> loader"],  # account: in the CSV only
        "top-users": [EVIL_USER, EVIL_DEPT],
        "users": [EVIL_USER, EVIL_DEPT],
        "departments": [EVIL_DEPT],
        "department-index": [EVIL_DEPT],
        "headline": [EVIL_CLUSTER],
        "partitions": [EVIL_JOB, EVIL_CLUSTER],
        "coverage": [EVIL_CLUSTER],
        "low-efficiency-departments": [EVIL_DEPT],
    }
    for section_id, strings in expected.items():
        html = section(page, section_id)
        for raw in strings:
            assert esc(raw) in html, (section_id, raw)
    assert f"<title>GPU monthly review 2025-03: alpha, {esc(EVIL_CLUSTER)}</title>" in page


def test_user_strings_are_escaped_in_figure_json(page: str) -> None:
    data, layout = figure_json(page, "fig-department-hours")
    ticks = layout["yaxis"]["ticktext"]
    assert "&lt;img src=x onerror=alert(2)&gt; · alpha" in ticks
    assert "physics · b&amp;&lt;i&gt;2&lt;/i&gt;" in ticks
    assert not any("<" in t for t in ticks + data[0]["customdata"])
    hist, _ = figure_json(page, "fig-utilization")
    assert {t["name"] for t in hist} == {"alpha", "b&amp;&lt;i&gt;2&lt;/i&gt;"}
    trend, _ = figure_json(page, "fig-trend-shares")
    assert "b&amp;&lt;i&gt;2&lt;/i&gt;: allocated (% of capacity)" in {t["name"] for t in trend}


def test_null_utilization_is_na(page: str) -> None:
    jobs_table = section(page, "top-idle-jobs")
    job4 = re.search(r"<tr[^>]*>(?:(?!</tr>).)*train-4.*?</tr>", jobs_table).group(0)
    assert '<td class="num">n/a</td>' in job4
    unmapped = re.search(r'<tr class="needs-mapping">.*?</tr>', section(page, "departments")).group(0)
    assert "unmapped (needs a mapping)" in unmapped and '<td class="num">n/a</td>' in unmapped


def test_unmapped_department_is_highlighted_in_table_and_figure(page: str) -> None:
    assert section(page, "departments").count('<tr class="needs-mapping">') == 1
    data, layout = figure_json(page, "fig-department-hours")
    shapes = data[0]["marker"]["pattern"]["shape"]
    hatched = [label for label, shape in zip(layout["yaxis"]["ticktext"], shapes, strict=True) if shape == "/"]
    assert hatched == ["unmapped (needs a mapping) · alpha"]


def test_department_bars_are_sorted_and_stacked() -> None:
    march = departments_frame().filter((pl.col("cluster") == "alpha") & (pl.col("month") == MONTH))
    active, idle = department_hours_figure(march).data
    fig = department_hours_figure(march)
    assert list(fig.layout.yaxis.ticktext) == [
        "unmapped (needs a mapping)",
        "&lt;img src=x onerror=alert(2)&gt;",
        "physics",
    ]
    assert list(active.x) == [0.0, 50.0, 150.0] and list(idle.x) == [0.0, 150.0, 150.0]
    assert fig.layout.barmode == "stack" and active.orientation == "h"


def test_utilization_bins_weight_by_gpu_hours() -> None:
    bins = utilization_bins(jobs_frame(), bin_pct=10)
    alpha = dict(bins.filter(pl.col("cluster") == "alpha").select("bin_start", "gpu_hours").rows())
    assert alpha == {50: 80.0, 10: 100.0, 90: 40.0}  # 100% falls in the last bin
    assert bins["gpu_hours"].sum() == pytest.approx(260.0)  # the null-utilization job is out
    with pytest.raises(ValueError):
        utilization_bins(jobs_frame(), bin_pct=7)


@pytest.mark.parametrize("empty", [pl.DataFrame(), None, "cleared"])
def test_empty_inputs_render_a_page_that_says_so(empty) -> None:
    frames = dict(clusters=clusters_frame(), departments=departments_frame(), jobs=jobs_frame())
    cleared = {k: (v.clear() if isinstance(empty, str) else empty) for k, v in frames.items()}
    page = render_review(make_inputs(**cleared, hourly=None, runs=None, model_hours=None, flags=None, users=None))
    rest = loads_shared_plotly(page)
    assert "No jobs were recorded for 2025-03 on any cluster." in rest
    assert "Plotly.newPlot" not in rest and rest.rstrip().endswith("</html>")
    assert "No flagged jobs." in rest and "No hourly GPU rows for this month." in rest


def test_no_jobs_but_capacity_shows_all_capacity_as_infra_idle() -> None:
    inputs = make_inputs(clusters=clusters_frame().slice(1, 1), departments=None, jobs=None, flags=None, users=None)
    page = render_review(inputs)
    assert "No jobs were recorded for 2025-03 on alpha." in page
    assert re.search(r"infra idle: [^<]*</td><td class=\"num\">375.0</td>", page)


def test_missing_column_is_an_error_not_a_blank() -> None:
    with pytest.raises(ValueError, match="queue_seconds"):
        make_inputs(jobs=jobs_frame().drop("queue_seconds"))


def test_blocks_compose_and_extra_sections_go_before_how_to_read() -> None:
    values = {"month": "2025-03", "clusters": ["<b>x</b>", "y"]}
    extra = Section("chargeback-reconciliation", "Chargeback <reconciliation>", "sections/no_jobs.html", values)
    page = render_review(make_inputs(), blocks=[headline_section, lambda inputs: None], extra_sections=[extra])
    assert section_ids(page) == ["headline", "chargeback-reconciliation", "how-to-read"]
    assert "Chargeback &lt;reconciliation&gt;" in page
    assert '<p class="notice">No jobs were recorded for 2025-03 on &lt;b&gt;x&lt;/b&gt;, y.</p>' in page
    assert len(REVIEW_BLOCKS) >= 15 and len(CLOSING_BLOCKS) == 1
    with pytest.raises(TypeError):
        render_review(make_inputs(), extra_sections=["<p>raw</p>"])  # type: ignore[list-item]


def test_rendering_is_deterministic(page: str) -> None:
    assert render_review(make_inputs()) == page


def test_print_stylesheet(page: str) -> None:
    css = re.search(r"@media print \{.*\n\}", page, flags=re.S).group(0)
    assert "size: landscape" in css and "max-width: 960px" in css and "background: #fff" in css
    assert "td.text, td.num, th { white-space: normal; }" in css  # no cut-off columns on paper
    assert ".table-wrap { overflow: visible; }" in css and "thead { display: table-header-group; }" in css
    for div_id in FIGURES:  # as wide as the box (.figure: at most 960 px), axis titles set
        layout = figure_json(page, div_id)[1]
        assert "width" not in layout and layout["autosize"] is True and layout["xaxis"]["title"]["text"]


def test_table_escapes_headers_and_cells_and_sections_their_titles() -> None:
    frame = pl.DataFrame({"a": ["<b>x</b>"], "n": [None]}, schema={"a": pl.String, "n": pl.Float64})
    columns = [Column("a", "<h>"), Column("n", "n", fmt_pct, True)]
    html = Section("s", "<t>", "sections/partitions.html", {"table": table(frame, columns)}).render()
    assert html == (
        '<section id="s" class="block"><h2>&lt;t&gt;</h2><div class="table-wrap"><table><thead><tr>'
        '<th class="text" scope="col">&lt;h&gt;</th><th class="num" scope="col">n</th></tr></thead>'
        '<tbody><tr><td class="text">&lt;b&gt;x&lt;/b&gt;</td><td class="num">n/a</td></tr></tbody></table></div>'
        "</section>"
    )
    empty = Section("s", "t", "sections/partitions.html", {"table": table(frame.clear(), columns)})
    assert empty.render_body() == '<p class="empty">No jobs.</p>'
    assert fmt_pct(float("nan")) == "n/a"


def test_write_review_path_and_replace(tmp_path: Path) -> None:
    first = write_review("<p>one</p>", tmp_path, "2025-03")
    assert first == tmp_path / "2025-03" / "review.html"
    assert first.read_text(encoding="utf-8") == "<p>one</p>"
    second = write_review("<p>two ✓</p>", tmp_path, "2025-03")
    assert second == first and first.read_text(encoding="utf-8") == "<p>two ✓</p>"
    assert sorted(p.name for p in first.parent.iterdir()) == ["review.html"]
    with pytest.raises(ValueError):
        write_review("x", tmp_path, "2025-13")


def test_write_review_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = write_review("<p>old</p>", tmp_path, "2025-03")
    calls = []

    def failing_replace(src, dst):
        calls.append((Path(src), Path(dst)))
        assert Path(src).read_text(encoding="utf-8") == "<p>new</p>"  # fully written first
        raise OSError("disk went away")

    monkeypatch.setattr(write_module.os, "replace", failing_replace)
    with pytest.raises(OSError):
        write_review("<p>new</p>", tmp_path, "2025-03")
    assert calls and calls[0][0].parent == target.parent and calls[0][1] == target
    assert target.read_text(encoding="utf-8") == "<p>old</p>"
    assert sorted(os.listdir(target.parent)) == ["review.html"]


def test_unmapped_name_matches_the_config_contract() -> None:
    from config import UNMAPPED  # reports may not import config; the test pins it

    assert figures_module.UNMAPPED == UNMAPPED


def test_unallocated_capacity_row_is_not_a_department() -> None:
    """The mart's (unallocated) capacity row is infra idle (headline), not a department row or bar."""
    departments = departments_frame()
    capacity_row = departments.slice(1, 1).with_columns(
        pl.lit("(unallocated)").alias("department"),
        pl.lit("(unallocated)").alias("division"),
        pl.lit(9999.0).alias("gpu_hours"),
        pl.lit(True).alias("is_unallocated"),
    )
    html = render_review(make_inputs(departments=pl.concat([departments, capacity_row])))
    assert "(unallocated)" not in html
    assert "9,999" not in html
