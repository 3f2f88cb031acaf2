"""The review and department pages of a demo-like month in headless Chromium: no console
or page errors, no network requests, every figure drawn, links resolve, screenshots saved."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from reports import (
    ReviewSettings,
    build_inputs,
    render_department_pages,
    render_review,
    write_department_pages,
    write_review,
)
from reports.data import previous_month
from reports.paths import department_file_name
from tests.support.browser import load_page
from tests.unit.reports_frames import runs_and_model_hours
from transforms.marts.fct_job_flags import SCHEMA as FLAG_SCHEMA
from transforms.marts.mart_user_monthly import SCHEMA as USER_SCHEMA

pytestmark = [pytest.mark.integration]

MONTH = date(2026, 10, 1)
EVIL = "<script>alert(1)</script>"
DEPARTMENTS = ["vision", "nlp", "search", "speech", "ads", "unmapped", EVIL]
MODELS = {"H100": 2.5, "A100": 1.4}
REASONS = [("ZERO_UTIL", "high"), ("LOW_UTIL", "medium"), ("IDLE_TAIL", "low"), ("OVERSIZED", "medium")]


def demo_month(seed: int = 5) -> dict[str, pl.DataFrame]:
    """400 jobs of 7 departments on two clusters, 12 months of monthly rows, hourly totals."""
    rng = np.random.default_rng(seed)
    n = 400
    hours = rng.gamma(2.0, 20.0, n)
    util = rng.beta(2, 3, n)
    util[rng.random(n) < 0.05] = np.nan
    jobs = (
        pl.DataFrame(
            {
                "cluster": rng.choice(["alpha", "beta"], n, p=[0.7, 0.3]),
                "job_id": [str(1000 + i) for i in range(n)],
                "job_name": [EVIL if i == 7 else f"train-{i}" for i in range(n)],
                "user_name": [f"user{k}" for k in rng.integers(0, 25, n)],
                "account": [f"acct{k}" for k in rng.integers(0, 9, n)],
                "department": rng.choice(DEPARTMENTS, n),
                "partition_name": rng.choice(["train", "infer", "debug"], n),
                "state": "COMPLETED",
                "start_time": [datetime(2026, 10, 1) + timedelta(hours=int(h)) for h in rng.integers(0, 700, n)],
                "gpus": rng.choice([1.0, 2.0, 4.0, 8.0], n),
                "gpu_model": rng.choice(["H100", "A100", "A100 3g.40gb"], n),
                "gpu_hours": hours,
                "utilization": util,
                "utilization_signal": "sm_active",
                "queue_seconds": rng.exponential(600, n),
                "n_samples": np.where(np.isnan(util), 0, 100),
            }
        )
        .with_columns(
            pl.col("utilization").fill_nan(None),
            (pl.col("gpu_hours") / pl.col("gpus") * 3600).cast(pl.Int64).alias("elapsed_seconds"),
        )
        .with_columns(
            (pl.col("gpu_hours") * pl.col("utilization")).fill_null(0.0).alias("active_gpu_hours"),
            (pl.col("gpu_hours") * (1 - pl.col("utilization"))).fill_null(0.0).alias("idle_gpu_hours"),
        )
    )
    months, month = [], MONTH
    for _ in range(12):
        months.append(month)
        month = previous_month(month)
    clusters, departments = [], []
    for i, m in enumerate(sorted(months)):
        scale = 0.6 + 0.04 * i
        for cluster, capacity in (("alpha", 64 * 744.0), ("beta", 32 * 744.0)):
            allocated = capacity * scale * rng.uniform(0.8, 1.0)
            active = allocated * rng.uniform(0.3, 0.6)
            clusters.append(
                dict(
                    cluster=cluster,
                    month=m,
                    capacity_gpu_hours=capacity,
                    allocated_gpu_hours=allocated,
                    active_gpu_hours=active,
                    idle_gpu_hours=allocated - active,
                    job_count=int(200 * scale),
                    sample_coverage=rng.uniform(0.9, 1.0),
                    jobs_without_samples=int(rng.integers(0, 9)),
                    queue_seconds_p50=rng.uniform(60, 600),
                    queue_seconds_p95=rng.uniform(900, 4000),
                )
            )
            for d in DEPARTMENTS:
                gpu_hours = allocated / len(DEPARTMENTS) * rng.uniform(0.5, 1.5)
                used = gpu_hours * rng.uniform(0.1, 0.7)
                departments.append(
                    dict(
                        cluster=cluster,
                        month=m,
                        division="unmapped" if d == "unmapped" else "research",
                        department=d,
                        job_count=20,
                        user_count=4,
                        gpu_hours=gpu_hours,
                        measured_gpu_hours=gpu_hours,
                        active_gpu_hours=used,
                        idle_gpu_hours=gpu_hours - used,
                        zero_util_gpu_hours=gpu_hours * 0.1,
                        utilization=used / gpu_hours,
                        energy_kwh=gpu_hours * 0.5,
                        queue_seconds_p50=300.0,
                        queue_seconds_p95=2000.0,
                        share_of_capacity=gpu_hours / capacity,
                    )
                )
    hour_starts = [datetime(2026, 10, 1) + timedelta(hours=h) for h in range(31 * 24)]
    daytime = np.array([0.9 if 8 <= t.hour < 20 and t.weekday() < 5 else 0.5 for t in hour_starts])
    hourly = pl.DataFrame(
        {
            "cluster": "alpha",
            "hour": hour_starts,
            "capacity_seconds": 64 * 3600.0,
            "allocated_seconds": 64 * 3600.0 * daytime,
            "active_seconds": 64 * 3600.0 * daytime * 0.45,
            "n_samples": 64 * 120,
            "expected_samples": 64 * 120,
        }
    )
    models = pl.DataFrame(
        [
            dict(
                month=m,
                cluster=c,
                gpu_model=g,
                capacity_gpu_hours=cap,
                allocated_gpu_hours=cap * 0.7,
                gpu_hours=cap * 0.7,
                idle_gpu_hours=cap * 0.35,
            )
            for m in months
            for c, g, cap in (
                ("alpha", "H100", 48 * 744.0),
                ("alpha", "A100 3g.40gb", 16 * 744.0),
                ("beta", "A100", 32 * 744.0),
            )
        ]
    )
    flagged = jobs.filter(pl.col("utilization").fill_null(0) < 0.25).head(60)
    flags = pl.DataFrame(
        [
            {name: None for name in FLAG_SCHEMA}
            | {k: row[k] for k in row if k in FLAG_SCHEMA}
            | dict(
                job_id_raw=row["job_id"],
                reason=reason,
                severity=severity,
                detail=f"activity {row['utilization']}",
                recommendation="release GPUs when idle",
                wasted_gpu_hours=row["idle_gpu_hours"] / (k + 1),
                idle_cost=row["idle_gpu_hours"] * 2.5,
                currency="EUR",
                month=MONTH,
            )
            for i, row in enumerate(flagged.iter_rows(named=True))
            for k, (reason, severity) in enumerate(REASONS[: 1 + i % 2])
        ],
        schema=FLAG_SCHEMA,
    )
    per_user = jobs.group_by("cluster", "user_name", "department").agg(
        pl.len().alias("job_count"),
        pl.col("gpu_hours").sum(),
        pl.col("active_gpu_hours").sum(),
        pl.col("idle_gpu_hours").sum(),
    )
    users = per_user.with_columns(
        (pl.col("gpu_hours") * 0.1).alias("zero_util_gpu_hours"),
        (pl.col("active_gpu_hours") / pl.col("gpu_hours")).alias("utilization"),
        (pl.col("idle_gpu_hours") * 2.0).alias("idle_cost"),
        pl.lit(1).alias("flagged_job_count"),
        (pl.col("idle_gpu_hours") * 0.5).alias("wasted_gpu_hours"),
        (pl.col("gpu_hours") * 0.1 > 24).alias("is_zero_util_over_threshold"),
        ((pl.col("gpu_hours") >= 50) & (pl.col("active_gpu_hours") / pl.col("gpu_hours") <= 0.25)).alias(
            "is_low_efficiency"
        ),
    ).with_columns(pl.lit("research").alias("division"), pl.lit("EUR").alias("currency"), pl.lit(MONTH).alias("month"))
    return dict(
        clusters=pl.DataFrame(clusters),
        departments=pl.DataFrame(departments),
        jobs=jobs,
        hourly=hourly,
        **runs_and_model_hours(models),
        flags=flags,
        users=users.select(list(USER_SCHEMA)),
    )


def test_review_and_department_pages_in_chromium(tmp_path: Path) -> None:
    settings = ReviewSettings(
        currency="EUR", prices=MODELS, quotas={"vision": 30, "nlp": 20, "search": 10}, overcommit_ratio=1.2
    )
    inputs = build_inputs(MONTH, "demo-like month", settings=settings, **demo_month())
    review = write_review(render_review(inputs), tmp_path, "2026-10")
    written = write_department_pages(render_department_pages(inputs), tmp_path, "2026-10")
    assert len(written) == len(DEPARTMENTS)
    html = review.read_text(encoding="utf-8")
    for href in re.findall(r'href="(departments/[^"]+)"', html):
        assert (review.parent / href).is_file(), href
    shots = tmp_path / "screenshots"
    shots.mkdir()
    pages = [
        review,
        review.parent / "departments" / "vision.html",
        review.parent / "departments" / department_file_name(EVIL),
    ]
    for page_file in pages:
        page = load_page(page_file, shots / f"{page_file.stem}.png")
        figures = page_file.read_text(encoding="utf-8").count("Plotly.newPlot(")
        assert page.console_errors == [] and page.page_errors == [] and page.dialogs == [], page_file.name
        assert [url for url in page.requests if not url.startswith("file:")] == []  # works offline
        assert figures >= 2 and page.plots_rendered == figures, page_file.name
        assert page.screenshot is not None and page.screenshot.stat().st_size > 20_000
    assert figures == 2  # a department page: its trend and its utilization histogram
    assert EVIL in page.text  # the last page is the hostile department's: its name shows as text


# printable width at 96 px/inch with 10 mm margins, landscape: A4 277 mm, Letter 259.4 mm
PRINT_WIDTHS = {"A4": 1047, "Letter": 980}
OVERFLOW_JS = """() => [...document.querySelectorAll('table, .figure, .js-plotly-plot')]
    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
    .map(e => (e.closest('section') || {}).id + ':' + e.tagName + ':' + Math.round(e.getBoundingClientRect().right))"""


def test_printed_pages_fit_a4_and_letter(tmp_path: Path) -> None:
    """With the print stylesheet, no table or figure is wider than a landscape A4/Letter page."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM_ARGS, chromium_path

    inputs = build_inputs(
        MONTH, "demo-like month", settings=ReviewSettings(currency="EUR", prices=MODELS), **demo_month()
    )
    review = write_review(render_review(inputs), tmp_path, "2026-10")
    write_department_pages(render_department_pages(inputs), tmp_path, "2026-10")
    files = [review, review.parent / "departments" / "vision.html"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
        try:
            for paper, width in PRINT_WIDTHS.items():
                for page_file in files:
                    page = browser.new_page(viewport={"width": width, "height": 800})
                    page.emulate_media(media="print")
                    page.goto(page_file.resolve().as_uri(), wait_until="load")
                    page.wait_for_timeout(300)
                    assert page.evaluate(OVERFLOW_JS) == [], (paper, page_file.name)
                    assert page.evaluate("document.documentElement.scrollWidth") <= width
                    page.close()
            page = browser.new_page()
            page.goto(review.resolve().as_uri(), wait_until="load")
            pdf = tmp_path / "review.pdf"
            page.pdf(path=str(pdf), format="A4", prefer_css_page_size=True)
            assert pdf.stat().st_size > 50_000
        finally:
            browser.close()


FIGURES_OUT_JS = """() => [...document.querySelectorAll('.figure, .js-plotly-plot, .main-svg')]
    .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
    .map(e => (e.closest('section') || {}).id + ':' + Math.round(e.getBoundingClientRect().right))"""


SCROLLING_TABLES_JS = """() => [...document.querySelectorAll('.table-wrap')]
    .filter(w => w.scrollWidth > w.clientWidth + 1).map(w => (w.closest('section') || {}).id)"""


def test_the_month_at_a_glance_comes_first_and_figures_fit_the_window(tmp_path: Path) -> None:
    """At 1280 and 800 px: the key figures are on the first screen, above the first table, with
    a change against the previous month; no figure is wider than the window, also after the
    window is made narrower (the figures redraw). At 1280 px no table needs scrolling sideways."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM_ARGS, chromium_path

    inputs = build_inputs(
        MONTH, "demo-like month", settings=ReviewSettings(currency="EUR", prices=MODELS), **demo_month()
    )
    review = write_review(render_review(inputs), tmp_path, "2026-10")
    write_department_pages(render_department_pages(inputs), tmp_path, "2026-10")
    files = [review, review.parent / "departments" / "vision.html"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
        try:
            for width in (1280, 800):
                for page_file in files:
                    where = (width, page_file.name)
                    page = browser.new_page(viewport={"width": width, "height": 900})
                    page.goto(page_file.resolve().as_uri(), wait_until="load")
                    page.wait_for_timeout(300)
                    tiles = page.locator(".key-figures")
                    first_table = page.locator("table").first.bounding_box()
                    box = tiles.bounding_box()
                    assert tiles.is_visible() and box is not None and first_table is not None, where
                    assert box["y"] < 900 and box["y"] + box["height"] <= first_table["y"], (where, box, first_table)
                    changes = page.locator(".kf-change").all_inner_texts()
                    arrowed = [c for c in changes if re.search(r"^[▲▼▬] [+-]", c)]
                    # flags: these frames have no earlier users mart rows, so no month to compare with
                    assert len(arrowed) >= 3 and set(changes) - set(arrowed) <= {"no previous month"}, (where, changes)
                    assert page.evaluate(FIGURES_OUT_JS) == [], where
                    assert page.evaluate("document.documentElement.scrollWidth") <= width, where
                    if width == 1280:  # every column on screen; then made narrower: the figures follow
                        assert page.evaluate(SCROLLING_TABLES_JS) == [], where
                        page.set_viewport_size({"width": 640, "height": 900})
                        page.wait_for_timeout(500)
                        assert page.evaluate(FIGURES_OUT_JS) == [], (640, page_file.name)
                    page.close()
        finally:
            browser.close()
