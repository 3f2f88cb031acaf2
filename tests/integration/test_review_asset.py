"""The review asset end to end on a temp DuckDB: marts rows in, review.html and the
department pages out (numbers from the warehouse, MIG priced at its base model, escaping),
and a rerun replaces the month's pages."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from dagster import materialize
from markupsafe import escape as esc

from config import EXAMPLE_CONFIG
from pipelines.assets.archive import archive_index
from pipelines.assets.reports import read_review_frames, review_html
from pipelines.resources import CardhoursResource
from reports.paths import department_file_name
from reports.plotly_asset import plotly_js_name
from tests.unit.reports_frames import (
    EVIL_DEPT,
    EVIL_JOB,
    MONTH,
    PREVIOUS,
    clusters_frame,
    departments_frame,
    flags_frame,
    jobs_frame,
    section,
    table_row,
    users_frame,
)
from warehouse import connect


def gpu_hourly_rows() -> pl.DataFrame:
    """Per model two hours whose GPU-seconds add up to: Feb H100 800/400 GPU-h (capacity/
    allocated); Mar H100 800/500 and A100 3g.40gb 200/100 (a MIG profile: joins the jobs'
    "A100 3g.40gb")."""
    rows = []
    for month, model, profile, capacity, allocated in (
        (PREVIOUS, "H100", None, 800.0, 400.0),
        (MONTH, "H100", None, 800.0, 500.0),
        (MONTH, "A100", "3g.40gb", 200.0, 100.0),
    ):
        for hour in (10, 22):
            rows.append(
                dict(
                    cluster="alpha",
                    hostname="gpu-001",
                    gpu=0,
                    gpu_i_id=1 if profile else None,
                    gpu_i_profile=profile,
                    gpu_model=model,
                    hour=datetime(month.year, month.month, 3, hour),
                    capacity_seconds=capacity * 1800,
                    allocated_seconds=allocated * 1800,
                    active_seconds=allocated * 900,
                    n_samples=100,
                    expected_samples=120,
                    month=month,
                )
            )
    return pl.DataFrame(rows)


def insert(conn, table: str, frame: pl.DataFrame) -> None:
    conn.register("frame", frame.to_arrow())
    conn.execute(f"INSERT INTO {table} BY NAME SELECT * FROM frame")  # table names: fixed list in this test
    conn.unregister("frame")


@pytest.fixture
def warehouse_config(tmp_path: Path) -> Path:
    config = tmp_path / "cardhours.toml"
    config.write_text(EXAMPLE_CONFIG.read_text(encoding="utf-8"), encoding="utf-8")
    conn = connect(tmp_path / "cardhours.duckdb")  # the example's warehouse path, relative to the file
    try:
        insert(conn, "marts.mart_cluster_monthly", clusters_frame())
        insert(conn, "marts.mart_department_monthly", departments_frame())
        insert(conn, "marts.fct_job_usage", jobs_frame().drop("end_time"))
        insert(conn, "marts.fct_gpu_hourly", gpu_hourly_rows())
        insert(conn, "marts.fct_job_flags", flags_frame())
        insert(conn, "marts.mart_user_monthly", users_frame())
    finally:
        conn.close()
    return config


def run_month(config: Path) -> dict:
    result = materialize(
        [review_html], partition_key="2025-03-01", resources={"cardhours": CardhoursResource(config_path=str(config))}
    )
    assert result.success
    return result.asset_materializations_for_node("reports__review_html")[0].metadata


def test_reads_twelve_months_and_the_month(warehouse_config: Path) -> None:
    conn = connect(warehouse_config.parent / "cardhours.duckdb")
    try:
        frames = read_review_frames(conn, MONTH)
    finally:
        conn.close()
    assert sorted(frames["clusters"]["month"].unique().to_list()) == [PREVIOUS, MONTH]
    march = (pl.col("month") == MONTH) & (pl.col("cluster") == "alpha")
    capacity = frames["model_hours"].filter(march).group_by("gpu_model").agg(pl.col("capacity_seconds").sum() / 3600)
    assert capacity.sort("gpu_model").rows() == [("A100 3g.40gb", pytest.approx(200.0)), ("H100", pytest.approx(800.0))]
    idle = frames["runs"].filter(march).group_by("gpu_model").agg(pl.col("idle_gpu_hours").sum()).sort("gpu_model")
    assert idle.rows() == [("A100 3g.40gb", pytest.approx(90.0)), ("H100", pytest.approx(25.0))]  # jobs 3 | 1, 2, 4, 5
    assert frames["runs"]["elapsed_seconds"].drop_nulls().len() == frames["runs"].height
    assert frames["hourly"]["capacity_seconds"].sum() == pytest.approx(1000.0 * 3600)
    assert frames["flags"].height == 3 and frames["users"].height == 3


def test_asset_writes_the_review_and_department_pages(warehouse_config: Path) -> None:
    reports = warehouse_config.parent / "reports" / "2025-03"
    reports.mkdir(parents=True)
    (reports / "flagged_jobs.csv").write_text("kept")  # another asset's output in the same folder
    metadata = run_month(warehouse_config)
    assert metadata["department_pages"].value == 3 and metadata["jobs"].value == 6
    review = (reports / "review.html").read_text(encoding="utf-8")
    headline = section(review, "headline")
    # example rates: H100 2.50, A100 1.40 (the MIG slice at the A100 price)
    assert table_row(headline, "workload idle cost (EUR)")[1:3] == ["188.50", "+188.50"]  # 25 x 2.5 + 90 x 1.4
    assert table_row(headline, "infra idle cost (EUR)")[1:3] == ["890.00", "-110.00 (-11.0%)"]  # vs 400 x 2.5
    assert "Quotas promise 96.0 GPUs" in section(review, "quotas")
    assert esc(EVIL_JOB) in section(review, "top-flagged-jobs") and EVIL_JOB not in review.split("</script>")[-1]
    pages = sorted(p.name for p in (reports / "departments").iterdir())
    assert pages == sorted(["physics.html", "unmapped.html", department_file_name(EVIL_DEPT)])
    assert (reports / "flagged_jobs.csv").read_text() == "kept"
    for name in pages:
        assert f'href="departments/{name}"' in review


def test_the_index_follows_the_month_and_the_pages_share_plotly_js(warehouse_config: Path) -> None:
    root = warehouse_config.parent / "reports"
    (root / "2025-02").mkdir(parents=True)
    (root / "2025-02" / "chargeback_focus.csv").write_text("an older month's export")
    result = materialize(
        [review_html, archive_index],
        partition_key="2025-03-01",
        resources={"cardhours": CardhoursResource(config_path=str(warehouse_config))},
    )
    assert result.success
    assert result.asset_materializations_for_node("reports__archive_index")[0].metadata["months"].value == 2
    html = (root / "index.html").read_text(encoding="utf-8")
    assert re.findall(r'<section id="month-([0-9-]+)"', html) == ["2025-03", "2025-02"]
    for page in ["2025-03/review.html", "2025-03/departments/physics.html", "2025-02/chargeback_focus.csv"]:
        assert f'href="{page}"' in html
    assert [p.name for p in (root / "assets").iterdir()] == [plotly_js_name()]
    physics = (root / "2025-03" / "departments" / "physics.html").read_text(encoding="utf-8")
    assert f'<script src="../../assets/{plotly_js_name()}"' in physics


def test_site_templates_from_the_config_show_on_the_written_pages(warehouse_config: Path) -> None:
    site = warehouse_config.parent / "site-templates"
    site.mkdir()
    (site / "header.html").write_text(
        '{% extends "cardhours/header.html" %}{% block logo %}<p class="logo">ACME GPUs</p>{% endblock %}'
    )
    key = 'dir = "reports"\n'
    text = warehouse_config.read_text(encoding="utf-8").replace(key, key + 'templates_dir = "site-templates"\n', 1)
    assert text.count('\ntemplates_dir = "site-templates"\n') == 1
    warehouse_config.write_text(text, encoding="utf-8")
    run_month(warehouse_config)
    reports = warehouse_config.parent / "reports" / "2025-03"
    for page in [reports / "review.html", *(reports / "departments").iterdir()]:
        assert '<header>\n<p class="logo">ACME GPUs</p><h1>' in page.read_text(encoding="utf-8"), page.name


def test_rerun_replaces_the_month_and_drops_vanished_departments(warehouse_config: Path) -> None:
    run_month(warehouse_config)
    reports = warehouse_config.parent / "reports" / "2025-03"
    first = (reports / "review.html").read_text(encoding="utf-8")
    run_month(warehouse_config)
    assert (reports / "review.html").read_text(encoding="utf-8") == first  # same rows, same page
    conn = connect(warehouse_config.parent / "cardhours.duckdb")
    try:
        conn.execute("DELETE FROM marts.mart_department_monthly WHERE department = 'unmapped'")
    finally:
        conn.close()
    run_month(warehouse_config)
    assert not (reports / "departments" / "unmapped.html").exists()
    assert (reports / "departments" / "physics.html").exists()
    assert not re.search(r'href="departments/unmapped\.html"', (reports / "review.html").read_text(encoding="utf-8"))


def test_settings_from_the_config_carry_the_dated_prices() -> None:
    import tomllib

    from config import load_config, parse_config
    from pipelines.assets.reports import review_settings

    settings = review_settings(load_config(EXAMPLE_CONFIG), MONTH)
    assert settings.currency == "EUR" and not settings.prices
    segments = settings.segments.select("gpu_model", "list_unit_price").rows()
    assert segments == [("A100", 1.40), ("H100", 2.50)]  # MIG labels at the base model; B200: none, named
    assert settings.segments["charge_period_start"].min() == datetime(2024, 4, 1)  # the 12 months of the trends
    assert settings.segments["charge_period_end"].max() == datetime(2025, 4, 1)
    data = tomllib.loads(EXAMPLE_CONFIG.read_text())
    data["rates"]["price_changes"] = [
        {"gpu_model": "H100", "gpu_hour": 2.8, "effective": datetime(2025, 3, 15, 12, 30)}
    ]
    changed = review_settings(parse_config(data), MONTH).segments.filter(pl.col("gpu_model") == "H100")
    assert changed.select("charge_period_end", "list_unit_price").rows() == [
        (datetime(2025, 3, 15, 12, 30), 2.5),
        (datetime(2025, 4, 1), 2.8),
    ]
    assert settings.quotas == {"vision": 32.0, "nlp": 48.0, "search": 16.0} and settings.overcommit_ratio == 1.0
    assert (settings.low_efficiency_gpu_hours, settings.low_efficiency_utilization) == (50.0, 0.25)
    assert settings.templates_dir is None  # the packaged templates
