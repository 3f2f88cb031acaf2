"""Each review section on crafted frames: the numbers, previous-month changes, quota and
borrowing, thresholds (fire and not at the edge), empty and first months."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import polars as pl
import pytest
from markupsafe import escape as esc

from reports.costs import base_model, price_key, undated_segments, unpriced_models, with_job_costs
from reports.data import hours_in_month, previous_month
from reports.sections.departments import low_efficiency_frame, quota_frame, quota_section
from reports.sections.flags import flagged_runs, top_users_section, users_section
from reports.sections.headline import headline_section
from reports.sections.overview import coverage_section
from reports.sections.time_profile import day_night_frame, hour_of_day_frame, time_profile_section
from reports.sections.usage import models_section, partitions_section
from reports.trends import monthly_totals, trends_section
from tests.unit.reports_frames import (
    EVIL_CLUSTER,
    EVIL_DEPT,
    EVIL_JOB,
    EVIL_USER,
    MONTH,
    PREVIOUS,
    SETTINGS,
    clusters_frame,
    department_row,
    flags_frame,
    job,
    jobs_frame,
    make_inputs,
    table_row,
)


def headline(inputs=None) -> str:
    return headline_section(inputs or make_inputs()).render_body()


def test_headline_values_and_changes_against_the_previous_month() -> None:
    html = headline()
    assert "change vs 2025-02" in html
    rows = {
        "capacity (GPU-hours)": ["1,000.0", "+200.0 (+25.0%)"],
        "allocated (% of capacity)": ["62.5%", "+12.5 pp"],
        "active (% of allocated)": ["40.0%", "-10.0 pp"],
        "workload idle: allocated, not active (GPU-hours)": ["375.0", "+175.0 (+87.5%)"],
        "workload idle cost (EUR)": ["675.00", "+275.00 (+68.8%)"],  # 300 x 2 + 75 x 1 (MIG at A100)
        "infra idle cost (EUR)": ["700.00", "-100.00 (-12.5%)"],  # (800-500) x 2 + (200-100) x 1
        "jobs": ["5", "+1 (+25.0%)"],
        "queue time p50 (min)": ["20.0", "+10.0 min"],
        "queue time p95 (min)": ["38.0", "+18.0 min"],
        "sample coverage (%)": ["97.5%", "+7.5 pp"],
    }
    for metric, (value, change) in rows.items():
        cells = table_row(html, metric)
        assert cells[1:3] == [value, change], metric
        assert cells[3:5][1] == "no previous month"  # the second cluster has no February row
    assert table_row(html, "queue time p50 (min)")[3] == "n/a"  # no queue times at all
    assert esc(EVIL_CLUSTER) in html


def test_first_month_says_no_previous_month() -> None:
    march_only = clusters_frame().filter(pl.col("month") == MONTH)
    html = headline(make_inputs(clusters=march_only))
    for metric in ("capacity (GPU-hours)", "workload idle cost (EUR)", "queue time p95 (min)"):
        cells = table_row(html, metric)
        assert cells[2] == cells[4] == "no previous month"


def test_zero_previous_value_gives_the_change_without_a_ratio() -> None:
    clusters = clusters_frame().with_columns(
        pl.when(pl.col("month") == PREVIOUS)
        .then(0)
        .otherwise(pl.col("jobs_without_samples"))
        .alias("jobs_without_samples")
    )
    assert table_row(headline(make_inputs(clusters=clusters)), "jobs without samples")[2] == "+2"


def test_month_helpers() -> None:
    assert previous_month(MONTH) == PREVIOUS and previous_month(PREVIOUS.replace(month=1)).month == 12
    assert hours_in_month(MONTH) == 744.0 and hours_in_month(PREVIOUS) == 672.0


def test_prices_use_the_base_model_for_mig_and_null_without_a_price() -> None:
    assert base_model("A100 3g.40gb") == "A100" and base_model("H100") == "H100"
    assert (
        price_key("A100 3g.40gb", {"A100"}) == "A100" and price_key("A100 3g.40gb", {"A100 3g.40gb"}) == "A100 3g.40gb"
    )
    assert price_key(None, {"A100"}) is None
    segments = undated_segments({"A100": 1.5, "H100": 2.0})
    frame = pl.DataFrame(
        {
            "gpu_model": ["A100 3g.40gb", "B200", "H100"],
            "gpu_hours": [2.0, 5.0, 1.0],
            "idle_gpu_hours": [1.0, 1.0, 0.0],
            "start_time": [datetime(2025, 3, 2)] * 3,
            "elapsed_seconds": [60, 60, 60],
        }
    )
    priced = with_job_costs(frame, segments, MONTH)
    assert priced["cost"].to_list() == [3.0, None, 2.0] and priced["idle_cost"].to_list() == [1.5, None, 0.0]
    assert unpriced_models(frame["gpu_model"], segments) == ["B200"]


def quota_inputs(**settings):
    departments = pl.DataFrame(
        [
            department_row("alpha", "physics", 744.0, 300.0),
            department_row("alpha", "chem", 2232.0, 900.0),
            department_row("alpha", "bio", 372.0, 100.0),
        ]
    )
    return make_inputs(departments=departments, settings=replace(SETTINGS, **settings))


def test_quota_use_and_borrowing() -> None:
    frame = {r["department"]: r for r in quota_frame(quota_inputs()).rows(named=True)}
    assert frame["physics"]["used_gpus"] == pytest.approx(1.0) and frame["physics"]["borrowed_gpus"] == 0.0
    assert frame["physics"]["quota_use"] == pytest.approx(1.0)  # at the quota: nothing borrowed
    assert frame["chem"]["used_gpus"] == pytest.approx(3.0) and frame["chem"]["borrowed_gpus"] == pytest.approx(1.0)
    assert frame["chem"]["borrowed_gpu_hours"] == pytest.approx(744.0) and frame["chem"]["quota_use"] == pytest.approx(
        1.5
    )
    assert frame["bio"]["quota_gpus"] == 0.0 and frame["bio"]["borrowed_gpu_hours"] == pytest.approx(372.0)
    assert frame["bio"]["quota_use"] is None
    html = quota_section(quota_inputs()).render_body()
    assert table_row(html, "chem")[1:] == ["2.0", "3.0", "150.0%", "2,232.0", "1.0", "744.0"]
    assert "Quotas promise 3.0 GPUs of a capacity of 1.3 GPUs: overcommit 2.23 (allowed: 1.50)" in html


def test_quota_with_unused_quota_department_and_without_quotas() -> None:
    frame = {r["department"]: r for r in quota_frame(make_inputs()).rows(named=True)}
    assert frame["chem"]["gpu_hours"] == 0.0 and frame["chem"]["used_gpus"] == 0.0  # quota, no use
    assert frame[EVIL_DEPT]["quota_gpus"] == 0.0
    assert frame["physics"]["gpu_hours"] == pytest.approx(310.0)  # both clusters
    html = quota_section(make_inputs(settings=replace(SETTINGS, quotas=None))).render_body()
    assert "No quotas are configured" in html


@pytest.mark.parametrize(
    ("utilization_ratio", "min_hours", "fires"),
    [(0.25, 50.0, True), (0.26, 50.0, False), (0.25, 200.0, True), (0.25, 200.1, False)],
)
def test_low_efficiency_departments_at_their_thresholds(utilization_ratio, min_hours, fires) -> None:
    departments = pl.DataFrame([department_row("alpha", "chem", 200.0, 200.0 * utilization_ratio)])
    inputs = make_inputs(departments=departments, settings=replace(SETTINGS, low_efficiency_gpu_hours=min_hours))
    assert (low_efficiency_frame(inputs).height == 1) is fires


def test_low_efficiency_on_the_crafted_month() -> None:
    frame = low_efficiency_frame(make_inputs())
    assert frame["department"].to_list() == [EVIL_DEPT]  # 200 GPU-h at 25%; unmapped has no signal


def test_flagged_runs_count_a_job_once_with_all_reasons() -> None:
    runs = flagged_runs(flags_frame())
    assert runs["job_id"].to_list() == ["3", "1"]
    evil = runs.row(0, named=True)
    assert evil["reasons"] == "LOW_UTIL, INPUT_BOUND" and evil["severity"] == "high"
    assert evil["wasted_gpu_hours"] == 90.0 and evil["recommendations"] == "fix LOW_UTIL <b>check</b> loader"
    assert flagged_runs(flags_frame().clear()).is_empty()


def test_flagged_jobs_section_escapes_and_shows_reasons() -> None:
    from reports.sections.flags import top_flagged_jobs_section

    html = top_flagged_jobs_section(make_inputs()).render_body()
    assert esc(EVIL_JOB) in html and "&lt;b&gt;check&lt;/b&gt; loader" in html and "<b>" not in html
    assert "LOW_UTIL, INPUT_BOUND" in html and "90.0" in html and "90.00" in html


def test_top_users_by_waste_and_the_per_user_table() -> None:
    top = top_users_section(make_inputs()).render_body()
    assert top.index(esc(EVIL_USER)) < top.index(">ann<") and ">bob<" not in top  # bob wasted nothing
    assert "zero-util over threshold; low efficiency" in top
    users = users_section(make_inputs()).render_body()
    assert users.index(">ann<") < users.index(esc(EVIL_USER)) < users.index(">bob<")  # by GPU-hours
    bob = [r for r in users.split("<tr>") if ">bob<" in r][0]
    assert '>unmapped (needs a mapping)</td><td class="num">2</td><td class="num">40.0<' in bob


def test_hour_of_day_and_day_night_shares() -> None:
    inputs = make_inputs()
    hours = {r["hour_of_day"]: r for r in hour_of_day_frame(inputs.hourly).rows(named=True)}
    assert hours[10]["allocated_share"] == pytest.approx(0.75) and hours[10]["active_share"] == pytest.approx(0.625)
    assert hours[22]["allocated_share"] == 0.0
    periods = {r["period"]: r for r in day_night_frame(inputs.hourly).rows(named=True)}
    assert periods["weekday day"]["allocated_share"] == pytest.approx(0.5)
    assert periods["weekday night"]["active_of_allocated"] is None  # nothing allocated
    assert periods["weekend"]["active_of_allocated"] == pytest.approx(1.0)
    html = time_profile_section(inputs).render_body()
    assert table_row(html, "weekday day")[1:] == ["2.0", "50.0%", "25.0%", "50.0%"]
    assert "No hourly GPU rows" in time_profile_section(make_inputs(hourly=None)).render_body()


def test_partition_view() -> None:
    html = partitions_section(make_inputs()).render_body()
    # gpu on alpha: jobs 1, 4, 5 (120 GPU-h; 4 has no signal), H100 at 2.0
    assert table_row(html, "alpha")[1:] == ["gpu", "3", "120.0", "240.00", "75.0%", "20.0", "40.00", "30.0", "39.0"]
    assert esc(EVIL_JOB) in html and EVIL_JOB not in html


def test_gpu_model_view_and_unpriced_models() -> None:
    html = models_section(make_inputs()).render_body()
    row = [r for r in html.split("<tr>") if ">A100 3g.40gb<" in r][0]
    for text in ("200.0", "50.0%", "100.0", "100.00", "10.0%", "90.00"):
        assert f">{text}<" in row
    assert "No price configured" not in html
    jobs = pl.concat([jobs_frame(), pl.DataFrame([job("7", gpu_model="B200")])], how="diagonal_relaxed")
    assert "No price configured for: B200" in models_section(make_inputs(jobs=jobs)).render_body()


def test_trends_over_the_months() -> None:
    totals = monthly_totals(make_inputs()).rows(named=True)
    assert [t["month"] for t in totals] == [PREVIOUS, MONTH]
    assert totals[1]["workload_idle_cost"] == pytest.approx(675.0) and totals[0]["infra_idle_cost"] == pytest.approx(
        800.0
    )
    assert totals[1]["infra_idle_gpu_hours"] == pytest.approx(375.0)
    html = trends_section(make_inputs()).render_body()
    assert "2 months of data" in html and table_row(html, "2025-02")[1:3] == ["800.0", "50.0%"]
    old = clusters_frame().with_columns(pl.lit(PREVIOUS.replace(year=2024)).alias("month")).head(1)
    assert (
        "2024-02" not in trends_section(make_inputs(clusters=pl.concat([old, clusters_frame()]))).render_body()
    )  # > 12 months


def test_coverage_section() -> None:
    html = coverage_section(make_inputs()).render_body()
    assert table_row(html, "alpha")[1:] == ["97.5%", "83.3%", "5", "2", "40.0"]
    assert table_row(html, esc(EVIL_CLUSTER))[2] == "n/a"  # no hourly rows for it
