"""Tests for reports/: the monthly review page, its shell, figures and writer."""

from __future__ import annotations

import json
import os
import re
from datetime import date, datetime
from pathlib import Path

import polars as pl
import pytest
from plotly.offline import get_plotlyjs

from reports import render_review, write_review
from reports import figures as figures_module
from reports import write as write_module
from reports.figures import department_hours_figure, utilization_bins
from reports.html import Column, Html, Section, esc, fmt_pct, render_table
from reports.review import REVIEW_BLOCKS, headline_frame, headline_section

MONTH = date(2025, 3, 1)
EVIL_JOB = "<script>alert(1)</script>"
EVIL_USER = 'a&b"c'
EVIL_DEPT = "<img src=x onerror=alert(2)>"
EVIL_CLUSTER = "b&<i>2</i>"
BUNDLE = get_plotlyjs()


def clusters_frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "cluster": ["alpha", EVIL_CLUSTER],
            "capacity_gpu_hours": [1000.0, 0.0],
            "allocated_gpu_hours": [625.0, 0.0],
            "active_gpu_hours": [250.0, 0.0],
            "idle_gpu_hours": [375.0, 0.0],
            "job_count": [5, 1],
            "sample_coverage": [0.975, 1.0],
            "jobs_without_samples": [2, 0],
        }
    )


def departments_frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "cluster": ["alpha", "alpha", "alpha", EVIL_CLUSTER],
            "month": [MONTH] * 4,
            "division": ["science", "science", "unmapped", "science"],
            "department": ["physics", EVIL_DEPT, "unmapped", "physics"],
            "job_count": [2, 2, 1, 1],
            "user_count": [1, 2, 1, 1],
            "gpu_hours": [300.0, 200.0, 125.0, 10.0],
            "active_gpu_hours": [150.0, 50.0, 50.0, 5.0],
            "idle_gpu_hours": [150.0, 150.0, 75.0, 5.0],
            "zero_util_gpu_hours": [10.0, 20.0, 30.0, 0.0],
            "utilization": [0.5, 0.25, None, 0.5],
            "energy_kwh": [80.0, 40.5, 30.0, 2.0],
            "queue_seconds_p50": [600.0, 1200.0, 60.0, 0.0],
            "queue_seconds_p95": [1200.0, 2400.0, 90.0, 0.0],
            "share_of_capacity": [0.3, 0.2, 0.125, None],
        }
    )


def job(job_id: str, **overrides) -> dict:
    row = dict(
        cluster="alpha", job_id=job_id, job_name=f"train-{job_id}", user_name="ann",
        account="phys", department="physics", division="science", partition_name="gpu",
        state="COMPLETED", start_time=datetime(2025, 3, 2, 10, 0),
        end_time=datetime(2025, 3, 2, 20, 0), gpus=4.0, gpu_model="H100", gpu_hours=40.0,
        utilization=0.5, utilization_signal="sm_active", idle_gpu_hours=20.0,
        zero_util_gpu_hours=1.0, queue_seconds=0.0, energy_kwh=10.0,
    )  # fmt: skip
    return row | overrides


def jobs_frame() -> pl.DataFrame:
    return pl.DataFrame(
        [
            job("1", queue_seconds=0.0),
            job("2", queue_seconds=600.0, idle_gpu_hours=5.0),
            job("3", queue_seconds=1200.0, job_name=EVIL_JOB, user_name=EVIL_USER,
                department=EVIL_DEPT, idle_gpu_hours=90.0),  # fmt: skip
            job("4", queue_seconds=1800.0, utilization=None, utilization_signal=None,
                idle_gpu_hours=80.0, department="unmapped"),  # fmt: skip
            job("5", queue_seconds=2400.0, utilization=1.0, idle_gpu_hours=0.0),
            job("9", cluster=EVIL_CLUSTER, queue_seconds=None, utilization=0.02),
        ]
    )


@pytest.fixture(scope="module")
def page() -> str:
    return render_review(
        MONTH, "warehouse test.duckdb", clusters_frame(), departments_frame(), jobs_frame()
    )


def outside_bundle(page: str) -> str:
    assert page.count(BUNDLE) == 1
    return page.replace(BUNDLE, "")


def section(page: str, section_id: str) -> str:
    match = re.search(rf'<section id="{section_id}".*?</section>', page, flags=re.S)
    assert match, section_id
    return match.group(0)


def figure_json(page: str, div_id: str) -> tuple[list, dict]:
    """The data and layout arguments of the Plotly.newPlot call for one div."""
    call = re.search(rf'Plotly\.newPlot\(\s*"{div_id}",\s*', outside_bundle(page))
    assert call, div_id
    decoder = json.JSONDecoder()
    data, end = decoder.raw_decode(call.string, call.end())
    comma = re.compile(r"\s*,\s*").match(call.string, end)
    layout, _ = decoder.raw_decode(call.string, comma.end())
    return data, layout


def test_page_is_one_document_with_plotlyjs_inlined_once(page: str) -> None:
    marker = BUNDLE[:200]  # the bundle's banner with the plotly.js version
    assert page.count(marker) == 1
    assert page.startswith("<!DOCTYPE html>")
    rest = outside_bundle(page)
    assert rest.count("<html") == 1 and rest.count("</html>") == 1
    before, after = page.split(BUNDLE)
    assert "Plotly.newPlot" not in before
    assert after.count("Plotly.newPlot(") == 2


def test_page_loads_no_external_resources(page: str) -> None:
    loading = r"<(script|img|iframe|embed|source|audio|video|input)\b[^>]*\bsrc\s*="
    assert not re.search(loading, page, flags=re.I)
    assert not re.search(r"<link\b", page, flags=re.I)
    assert not re.search(r"@import|url\(\s*['\"]?(https?:)?//", page, flags=re.I)
    rest = outside_bundle(page)
    assert "http://" not in rest and "https://" not in rest
    hrefs = re.findall(r'href="([^"]*)"', rest)
    assert hrefs and all(h.startswith(("#", "data:")) for h in hrefs)


def test_user_strings_are_escaped_in_tables(page: str) -> None:
    rest = outside_bundle(page)
    for raw in (EVIL_JOB, "<script>alert(1)", EVIL_DEPT, "<i>2</i>", EVIL_USER):
        assert raw not in rest
    jobs_table = section(page, "top-idle-jobs")
    assert esc(EVIL_JOB) in jobs_table
    assert "a&amp;b&quot;c" in jobs_table
    assert esc(EVIL_DEPT) in section(page, "departments")
    assert esc(EVIL_CLUSTER) in section(page, "headline")
    assert f"<title>GPU monthly review 2025-03: alpha, {esc(EVIL_CLUSTER)}</title>" in page


def test_user_strings_are_escaped_in_figure_json(page: str) -> None:
    data, layout = figure_json(page, "fig-department-hours")
    ticks = layout["yaxis"]["ticktext"]
    assert "&lt;img src=x onerror=alert(2)&gt; · alpha" in ticks
    assert "physics · b&amp;&lt;i&gt;2&lt;/i&gt;" in ticks
    assert not any("<" in t for t in ticks + data[0]["customdata"])
    hist, _ = figure_json(page, "fig-utilization")
    assert {t["name"] for t in hist} == {"alpha", "b&amp;&lt;i&gt;2&lt;/i&gt;"}


def test_headline_numbers_match_inputs(page: str) -> None:
    head = headline_frame(clusters_frame(), jobs_frame()).row(0, named=True)
    assert head["allocated_share"] == pytest.approx(0.625)
    assert head["active_share"] == pytest.approx(0.4)
    assert head["infra_idle_gpu_hours"] == pytest.approx(375.0)
    assert head["queue_p50_s"] == pytest.approx(1200.0)
    assert head["queue_p95_s"] == pytest.approx(2280.0)  # linear: 1800 + 0.8 * 600
    html = section(page, "headline")
    for text in ("1,000.0", "62.5%", "40.0%", "375.0", "20.0", "38.0", "97.5%"):
        assert f'<td class="num">{text}</td>' in html


def test_zero_capacity_and_missing_queue_show_na(page: str) -> None:
    head = headline_frame(clusters_frame(), jobs_frame()).row(1, named=True)
    assert head["allocated_share"] is None and head["queue_p50_s"] is None
    row = re.search(r"<tr><td[^>]*>allocated \(% of capacity\)</td>.*?</tr>", page).group(0)
    assert row.endswith('<td class="num">62.5%</td><td class="num">n/a</td></tr>')


def test_null_utilization_is_na(page: str) -> None:
    jobs_table = section(page, "top-idle-jobs")
    job4 = re.search(r"<tr[^>]*>(?:(?!</tr>).)*train-4.*?</tr>", jobs_table).group(0)
    assert '<td class="num">n/a</td>' in job4
    departments = section(page, "departments")
    unmapped = re.search(r'<tr class="needs-mapping">.*?</tr>', departments).group(0)
    assert "unmapped (needs a mapping)" in unmapped and '<td class="num">n/a</td>' in unmapped


def test_unmapped_department_is_highlighted_in_table_and_figure(page: str) -> None:
    assert section(page, "departments").count('<tr class="needs-mapping">') == 1
    data, layout = figure_json(page, "fig-department-hours")
    hatched = [
        label
        for label, shape in zip(layout["yaxis"]["ticktext"], data[0]["marker"]["pattern"]["shape"])
        if shape == "/"
    ]
    assert hatched == ["unmapped (needs a mapping) · alpha"]


def test_department_bars_are_sorted_and_stacked() -> None:
    fig = department_hours_figure(departments_frame().filter(pl.col("cluster") == "alpha"))
    active, idle = fig.data
    assert list(fig.layout.yaxis.ticktext) == [
        "unmapped (needs a mapping)", "&lt;img src=x onerror=alert(2)&gt;", "physics",
    ]  # fmt: skip
    assert list(active.x) == [50.0, 50.0, 150.0] and list(idle.x) == [75.0, 150.0, 150.0]
    assert fig.layout.barmode == "stack" and active.orientation == "h"


def test_utilization_bins_weight_by_gpu_hours() -> None:
    bins = utilization_bins(jobs_frame(), bin_pct=10)
    alpha = dict(bins.filter(pl.col("cluster") == "alpha").select("bin_start", "gpu_hours").rows())
    assert alpha == {50: 120.0, 90: 40.0}  # three jobs at 50%, 100% falls in the last bin
    assert bins["gpu_hours"].sum() == pytest.approx(200.0)  # the null-utilization job is out
    with pytest.raises(ValueError):
        utilization_bins(jobs_frame(), bin_pct=7)


def test_units_in_department_headers(page: str) -> None:
    departments = section(page, "departments")
    for header in ("GPU-hours", "energy (kWh)", "queue p50 (min)", "utilization (%)"):
        assert f">{header}</th>" in departments
    assert '<td class="num">10.0</td><td class="num">20.0</td>' in departments  # p50 600/1200s


@pytest.mark.parametrize(
    "frames",
    [
        (pl.DataFrame(), pl.DataFrame(), pl.DataFrame()),
        (clusters_frame().clear(), departments_frame().clear(), jobs_frame().clear()),
    ],
)
def test_empty_inputs_render_a_page_that_says_so(frames) -> None:
    page = render_review(MONTH, "empty", *frames)
    rest = outside_bundle(page)
    assert "No jobs were recorded for 2025-03 on any cluster." in rest
    assert "Plotly.newPlot" not in rest and rest.rstrip().endswith("</html>")


def test_no_jobs_but_capacity_shows_all_capacity_as_infra_idle() -> None:
    page = render_review(MONTH, "x", clusters_frame().head(1), pl.DataFrame(), pl.DataFrame())
    assert "No jobs were recorded for 2025-03 on alpha." in page
    assert re.search(r"infra idle[^<]*</td><td class=\"num\">375.0</td>", page)


def test_missing_column_is_an_error_not_a_blank() -> None:
    with pytest.raises(ValueError, match="queue_seconds"):
        jobs = jobs_frame().drop("queue_seconds")
        render_review(MONTH, "x", clusters_frame(), departments_frame(), jobs)


def test_blocks_compose() -> None:
    only = [headline_section, lambda inputs: None]
    frames = clusters_frame(), departments_frame(), jobs_frame()
    page = render_review(MONTH, "x", *frames, blocks=only)
    assert re.findall(r'<section id="([^"]+)"', page) == ["headline"]
    assert len(REVIEW_BLOCKS) >= 6


def test_rendering_is_deterministic(page: str) -> None:
    again = render_review(
        MONTH, "warehouse test.duckdb", clusters_frame(), departments_frame(), jobs_frame()
    )
    assert again == page


def test_print_stylesheet(page: str) -> None:
    css = re.search(r"@media print \{.*\n\}", page, flags=re.S).group(0)
    assert "break-before: page" in css and "width: 720px" in css
    assert "background: #fff" in css
    _, layout = figure_json(page, "fig-utilization")
    assert layout["width"] == 720


def test_table_escapes_headers_and_cells_and_sections_need_html() -> None:
    frame = pl.DataFrame({"a": ["<b>x</b>"], "n": [None]}, schema={"a": pl.String, "n": pl.Float64})
    html = render_table(frame, [Column("a", "<h>"), Column("n", "n", fmt_pct, True)])
    assert "<b>" not in html and "&lt;h&gt;</th>" in html and '<td class="num">n/a</td>' in html
    with pytest.raises(TypeError):
        Section("s", "title", "<p>raw</p>")  # type: ignore[arg-type]
    assert Section("s", "<t>", Html("<p>ok</p>")).render().count("&lt;t&gt;") == 1
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
    from cardhours.config import UNMAPPED  # reports may not import config; the test pins it

    assert figures_module.UNMAPPED == UNMAPPED


def test_unallocated_capacity_row_is_not_a_department() -> None:
    """The mart's (unallocated) capacity row is infra idle (headline), not a department row or bar."""
    departments = departments_frame().with_columns(pl.lit(False).alias("is_unallocated"))
    capacity_row = departments.head(1).with_columns(
        pl.lit("(unallocated)").alias("department"), pl.lit("(unallocated)").alias("division"),
        pl.lit(9999.0).alias("gpu_hours"), pl.lit(True).alias("is_unallocated"),
    )
    html = render_review(MONTH, "x", clusters_frame(), pl.concat([departments, capacity_row]), jobs_frame())
    assert "(unallocated)" not in html
    assert "9,999" not in html
