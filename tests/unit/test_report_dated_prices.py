"""The review's costs at the dated list prices the chargeback uses: a price change at a
non-hour instant splits a job's and an hour's GPU-hours by seconds, the department costs
agree with the chargeback's lines, and a month without changes prices as before."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timedelta

import polars as pl
import pytest

from config.rates import RatesConfig, price_frame
from reports import ReviewSettings, build_inputs, render_department_pages, render_review
from reports.costs import undated_segments, with_hour_cost, with_job_costs
from reports.sections.departments import department_costs
from reports.sections.headline import headline_frame
from reports.sections.usage import model_frame, models_section
from reports.trends import monthly_totals
from tests.support.chargeback_frames import build, rates, run, usage

MONTH = date(2026, 10, 1)
SEPT = date(2026, 9, 1)
CHANGE = datetime(2026, 10, 15, 12, 30)  # H100: 2.5 -> 3.5 per GPU-hour
CHANGED = rates(price_changes=[{"gpu_model": "H100", "gpu_hour": 3.5, "effective": CHANGE}])


def segments(config: RatesConfig = CHANGED) -> pl.DataFrame:
    """As pipelines/assets/reports.py passes them: the 12 months up to the reviewed one."""
    frame = price_frame(config, datetime(2025, 11, 1), datetime(2026, 11, 1))
    return frame.with_columns(pl.col("list_unit_price").cast(pl.Float64))


def jobs(*rows: dict) -> pl.DataFrame:
    """fct_job_usage rows as the review reads them (idle = GPU-hours - active)."""
    return usage(*rows).with_columns(
        (pl.col("gpu_hours") - pl.col("active_gpu_hours")).alias("idle_gpu_hours"), pl.lit(0).alias("queue_seconds")
    )


def costs(frame: pl.DataFrame, config: RatesConfig = CHANGED) -> dict[str, tuple]:
    priced = with_job_costs(frame, segments(config), MONTH)
    return {r["job_id"]: (r["cost"], r["idle_cost"]) for r in priced.rows(named=True)}


def test_a_job_spanning_the_change_is_priced_part_at_each_price_by_seconds() -> None:
    priced = costs(
        jobs(
            run("span", CHANGE - timedelta(hours=2), 4, gpus=2),  # 4 GPU-hours at 2.5, 4 at 3.5
            run("second", CHANGE - timedelta(seconds=60), 180 / 3600),  # 60 s at 2.5, 120 s at 3.5
            run("before", CHANGE - timedelta(hours=2), 2),  # ends at the change
            run("after", CHANGE, 1),  # starts at it
            run("sept", datetime(2026, 9, 30, 23), 2, month_start=datetime(2026, 10, 1)),  # 1 h held in October
        )
    )
    assert priced["span"] == (pytest.approx(24.0), pytest.approx(12.0))
    assert priced["second"][0] == pytest.approx(0.05 * (2.5 / 3 + 3.5 * 2 / 3))
    assert priced["before"] == (5.0, 2.5) and priced["after"] == (3.5, 1.75) and priced["sept"] == (2.5, 1.25)


def test_mig_at_its_base_model_unpriced_null_and_zero_seconds_at_the_price_of_its_start() -> None:
    priced = costs(
        jobs(
            run("mig", CHANGE - timedelta(hours=1), 2, gpus=3 / 7, gpu_model="A100 3g.40gb"),
            run("b200", CHANGE, 1, gpu_model="B200"),
            run("empty", CHANGE + timedelta(hours=1), 0),
        )
    )
    assert priced["mig"][0] == pytest.approx(2 * 3 / 7 * 1.4)  # A100 has no change
    assert priced["b200"] == (None, None) and priced["empty"] == (0.0, 0.0)


def test_an_hour_holding_the_change_is_seconds_weighted() -> None:
    hours = pl.DataFrame(
        {
            "gpu_model": ["H100", "H100", "H100", "A100 1g.10gb", "B200"],
            "hour": [datetime(2026, 10, 15, h) for h in (11, 12, 13, 12, 12)],
            "idle": [2.0] * 5,
        }
    )
    priced = with_hour_cost(hours, segments(), "idle", "cost")["cost"].to_list()
    assert priced == [5.0, pytest.approx(2 * (2.5 + 3.5) / 2), 7.0, pytest.approx(2.8), None]


def month_inputs(config: RatesConfig = CHANGED, **settings) -> tuple:
    """September and October (the change) on cluster c1: runs, hourly capacity, jobs."""
    october = jobs(
        run("span", CHANGE - timedelta(hours=2), 4, gpus=2, department="nlp"),
        run("after", CHANGE, 10, department="vision"),
        run("mig", datetime(2026, 10, 3), 5, gpus=3 / 7, gpu_model="A100 3g.40gb", department="vision"),
        run("b200", datetime(2026, 10, 3), 5, gpu_model="B200", department="vision"),
    )
    september = jobs(
        run("s1", datetime(2026, 9, 10), 10, month_start=datetime(2026, 9, 1), month_end=datetime(2026, 10, 1))
    )
    hours = [datetime(2026, 10, 15, h) for h in (11, 12, 13)] + [datetime(2026, 9, 10)]
    model_hours = pl.DataFrame(
        {
            "cluster": "c1",
            "month": [MONTH] * 3 + [SEPT],
            "gpu_model": "H100",
            "hour": hours,
            "capacity_seconds": 8 * 3600.0,
            "allocated_seconds": 4 * 3600.0,
        }
    )
    departments = october.group_by("cluster", "department").agg(
        pl.lit(MONTH).alias("month"),
        pl.lit("research").alias("division"),
        pl.len().alias("job_count"),
        pl.col("gpu_hours").sum(),
    )
    runs = pl.concat([october, september]).select(
        "cluster", "month", "gpu_model", "start_time", "elapsed_seconds", "gpu_hours", "idle_gpu_hours"
    )
    settings = ReviewSettings(currency="EUR", price_segments=segments(config), **settings)
    return october, runs, model_hours, departments, settings


def review(config: RatesConfig = CHANGED):
    october, runs, model_hours, departments, settings = month_inputs(config)
    clusters = pl.DataFrame(
        {
            "cluster": ["c1", "c1"],
            "month": [SEPT, MONTH],
            "capacity_gpu_hours": [8.0, 24.0],
            "allocated_gpu_hours": [4.0, 12.0],
            "active_gpu_hours": [2.0, 6.0],
        }
    )
    clusters = clusters.with_columns(idle_gpu_hours=pl.col("allocated_gpu_hours") - pl.col("active_gpu_hours"))
    for name in ("job_count", "jobs_without_samples"):
        clusters = clusters.with_columns(pl.lit(1).alias(name))
    for name in ("sample_coverage", "queue_seconds_p50", "queue_seconds_p95"):
        clusters = clusters.with_columns(pl.lit(1.0).alias(name))
    for name in (
        "user_count",
        "measured_gpu_hours",
        "active_gpu_hours",
        "idle_gpu_hours",
        "zero_util_gpu_hours",
        "utilization",
        "energy_kwh",
        "queue_seconds_p50",
        "queue_seconds_p95",
        "share_of_capacity",
    ):
        departments = departments.with_columns(pl.lit(1.0).alias(name))
    return build_inputs(
        MONTH,
        "test",
        clusters=clusters,
        departments=departments,
        jobs=october,
        runs=runs,
        model_hours=model_hours,
        settings=settings,
    )


def test_the_pages_use_the_dated_prices_and_name_the_unpriced_model() -> None:
    inputs = review()
    idle = {"span": 12.0, "after": 5 * 3.5, "mig": 2.5 * 3 / 7 * 1.4}  # utilization 0.5: idle = half
    head = headline_frame(inputs, MONTH).row(0, named=True)
    assert head["workload_idle_cost"] == pytest.approx(sum(idle.values()))
    assert head["infra_idle_cost"] == pytest.approx(4 * (2.5 + 3.0 + 3.5))  # 11:00, 12:00 (half/half), 13:00
    previous = headline_frame(inputs, SEPT).row(0, named=True)
    assert previous["workload_idle_cost"] == pytest.approx(5 * 2.5) and previous["infra_idle_cost"] == 10.0
    totals = {t["month"]: t for t in monthly_totals(inputs).rows(named=True)}
    assert totals[MONTH]["infra_idle_cost"] == pytest.approx(head["infra_idle_cost"])
    dept = {r["department"]: r for r in department_costs(inputs).rows(named=True)}
    assert dept["nlp"]["cost"] == pytest.approx(24.0)
    assert dept["vision"]["cost"] == pytest.approx(10 * 3.5 + 5 * 3 / 7 * 1.4)  # B200 left out, named
    models = {r["gpu_model"]: r for r in model_frame(inputs).rows(named=True)}
    assert models["B200"]["cost"] is None and models["H100"]["cost"] == pytest.approx(24.0 + 35.0)
    assert "No price configured for: B200" in models_section(inputs).render_body()


def test_department_costs_agree_with_the_chargeback_lines_to_the_cent() -> None:
    october = jobs(
        run("a", CHANGE - timedelta(hours=7, seconds=13), 30.5, gpus=8, department="nlp"),
        run("b", datetime(2026, 10, 1, 0, 0, 1), 400, gpus=3, department="nlp", qos="high"),
        run("c", CHANGE + timedelta(seconds=1), 3.3, gpus=1, department="vision", partition="debug"),
        run("d", CHANGE - timedelta(minutes=1), 0.05, gpus=3 / 7, gpu_model="A100 3g.40gb", department="vision"),
        run("e", datetime(2026, 9, 29), 72, gpus=2, department="vision"),  # from September
    )
    lines = build(october, CHANGED).lines
    assert lines.filter(pl.col("gpu_model") == "H100")["charge_period_start"].n_unique() == 2
    charged = lines.group_by("department").agg(
        ((pl.col("gpu_hours_micro") * pl.col("list_unit_price_micro")).sum() / 1e12).alias("charged")
    )
    inputs = replace(review(), jobs=with_job_costs(october, segments(), MONTH))
    reviewed = department_costs(inputs).join(charged, on="department")
    assert reviewed.height == 2
    for row in reviewed.rows(named=True):
        assert row["cost"] == pytest.approx(row["charged"], abs=0.005), row


def test_a_month_without_price_changes_prices_as_before() -> None:
    base = {"H100": 2.5, "A100": 1.4}
    inputs = review(rates())
    for row in inputs.jobs.rows(named=True):  # hours x the base price, bit for bit
        price = {"H100": 2.5, "A100 3g.40gb": 1.4}.get(row["gpu_model"])
        assert row["cost"] == (None if price is None else row["gpu_hours"] * price)
    head = headline_frame(inputs, MONTH).row(0, named=True)
    assert head["infra_idle_cost"] == (24.0 - 12.0) * 2.5
    undated = replace(inputs.settings, price_segments=None, prices=base)
    before = build_inputs(
        MONTH,
        "test",
        clusters=inputs.clusters,
        departments=inputs.departments,
        jobs=month_inputs()[0],
        runs=month_inputs()[1],
        model_hours=month_inputs()[2],
        settings=undated,
    )
    assert render_review(inputs) == render_review(before)
    assert render_department_pages(inputs) == render_department_pages(before)
    assert undated_segments(base)["list_unit_price"].to_list() == [1.4, 2.5]


def test_settings_take_one_kind_of_prices() -> None:
    with pytest.raises(ValueError, match="not both"):
        ReviewSettings(prices={"H100": 2.5}, price_segments=segments())


def test_the_review_marts_price_idle_hours_at_the_dated_prices_too() -> None:
    """fct_job_flags and mart_user_monthly price idle_cost with the same segments."""
    from transforms.marts.flag_rules.costs import with_idle_cost

    runs = jobs(
        run("span", CHANGE - timedelta(hours=2), 4, gpus=2), run("b200", CHANGE, 1, gpu_model="B200", account="x")
    )
    priced = with_idle_cost(runs, segments(), "EUR", MONTH)
    assert priced["idle_cost"].to_list() == [pytest.approx(12.0), None]  # as the pages price them; B200 has no price
    assert priced["idle_cost"].to_list()[:1] == with_job_costs(runs, segments(), MONTH)["idle_cost"].to_list()[:1]
    assert priced["currency"].to_list() == ["EUR", "EUR"]
