"""FOCUS rows, export conformance, corrections of closed months, reconciliation, the review section."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from pipelines.checks.chargeback import CHECKS, reconciliation_checks
from reports.chargeback_section import chargeback_section, closed_lines
from reports.focus_export import EXPORT_COLUMNS, write_chargeback_files
from tests.support.chargeback_frames import MONTH, build, capacity, rates, run, usage
from tests.support.focus_conformance import MANDATORY, csv_problems, parquet_problems
from transforms.marts.fct_chargeback_focus import FOCUS_COLUMNS, focus_corrections
from transforms.marts.fct_chargeback_jobs import job_corrections
from transforms.marts.mart_chargeback_reconciliation import mart_chargeback_reconciliation

NEXT = date(2026, 11, 1)
CONFIG = rates(
    idle_capacity="proportional",
    qos_multipliers={"high": 1.5},
    price_changes=[{"gpu_model": "H100", "gpu_hour": 2.8, "effective": datetime(2026, 10, 20, 6, 30, 15)}],
)
CAPACITY = capacity(h100_gpus=4, mig_slices={"3g.40gb": 6 / 7, "1g.10gb": 2 / 7})


def month_usage() -> pl.DataFrame:
    """A demo-like month: departments, an unmapped account, MIG slices, a QOS premium, runs across
    the price change and the month's ends, an unmeasured run."""
    return usage(
        run("100", datetime(2026, 9, 30, 20), 10, gpus=2),
        run("101", datetime(2026, 10, 20, 1), 11, gpus=4, qos="high"),
        run("102", datetime(2026, 10, 5, 3, 17, 11), 33.3, department="speech", account="sp-train"),
        run("103", datetime(2026, 10, 7), 50, gpus=3 / 7, gpu_model="A100 3g.40gb", department="speech"),
        run("104", datetime(2026, 10, 8), 80, gpus=1 / 7, gpu_model="A100 1g.10gb", utilization=None),
        run("105", datetime(2026, 10, 9), 12.5, department="unmapped", division="unmapped", account="legacy"),
        run("106", datetime(2026, 10, 31, 20), 9, gpus=1, department="speech"),
    )


def reconcile(focus: pl.DataFrame, jobs: pl.DataFrame, job_usage: pl.DataFrame, cap=CAPACITY) -> pl.DataFrame:
    return mart_chargeback_reconciliation(focus, jobs, job_usage, cap, MONTH)


def test_export_files_conform_to_focus(tmp_path: Path) -> None:
    built = build(month_usage(), CONFIG, CAPACITY)
    paths = write_chargeback_files(built.focus, built.jobs, tmp_path, "2026-10")
    assert csv_problems(paths["focus_csv"]) == []
    assert parquet_problems(paths["focus_parquet"]) == []
    header = paths["focus_csv"].read_text().splitlines()[0].split(",")
    assert header == EXPORT_COLUMNS and set(MANDATORY) <= set(header)
    assert header[len(FOCUS_COLUMNS) :][:6] == [
        "x_ActiveGpuHours",
        "x_IdleGpuHours",
        "x_Utilization",
        "x_JobCount",
        "x_Division",
        "x_IdleShare",
    ]
    text = paths["focus_csv"].read_text() + paths["jobs_csv"].read_text()
    assert "e-0" not in text and "00000001" not in text  # no float artefacts
    jobs = pl.read_csv(paths["jobs_csv"], infer_schema=False)
    assert jobs.height == built.jobs.height and jobs["start_time"].str.ends_with("Z").all()


def test_conformance_checker_catches_broken_files(tmp_path: Path) -> None:
    built = build(month_usage(), CONFIG, CAPACITY)
    path = write_chargeback_files(built.focus, built.jobs, tmp_path, "2026-10")["focus_csv"]
    broken = path.read_text().replace("T00:00:00Z", " 00:00:00", 1).replace(",Usage,", ",usage,", 2)
    broken = broken.replace("x_ChargeKind", "ChargeKind")
    path.write_text(broken)
    problems = csv_problems(path)
    assert any("ISO 8601" in p for p in problems) and any("ChargeCategory" in p for p in problems)
    assert any("x_ prefix" in p for p in problems)


def test_rows_per_department_model_and_charge_period() -> None:
    focus = build(month_usage(), CONFIG, CAPACITY).focus
    usage_rows = focus.filter(pl.col("x_ChargeKind") == "usage")
    key = ["SubAccountId", "SkuId", "SkuPriceId", "ChargePeriodStart"]
    assert usage_rows.select(key).is_unique().all()
    h100 = usage_rows.filter((pl.col("SubAccountId") == "nlp") & (pl.col("SkuId") == "H100"))
    assert h100["ChargePeriodStart"].unique().sort().to_list() == [
        datetime(2026, 10, 1),
        datetime(2026, 10, 20, 6, 30, 15),
    ]
    assert set(usage_rows["SkuId"]) == {"H100", "A100 3g.40gb", "A100 1g.10gb"}
    assert usage_rows.filter(pl.col("SubAccountId") == "nlp")["SubAccountName"].unique().to_list() == [
        "Language Models"
    ]
    unmeasured = usage_rows.filter(pl.col("SkuId") == "A100 1g.10gb")
    assert unmeasured["x_Utilization"].to_list() == [None] and unmeasured["x_JobCount"].to_list() == [1]


def test_totals_reconcile_and_costs_are_policy_independent_to_the_cent() -> None:
    totals = {}
    for policy in ("none", "proportional", "even"):
        built = build(month_usage(), rates(idle_capacity=policy), CAPACITY)
        rec = reconcile(built.focus, built.jobs, month_usage())
        assert rec.select(list(flag for flag, _ in CHECKS.values())).row(0) == (True, True, True, True), policy
        totals[policy] = built.focus["BilledCost"].sum()
        assert rec["capacity_gpu_hours"][0] == Decimal("3826.285715")  # 2976 + 637.714286 + 212.571429
    assert max(totals.values()) - min(totals.values()) <= Decimal("0.05")


@pytest.mark.parametrize(
    ("tamper", "failing"),
    [
        ("drop_job_line", {"departments_balanced", "jobs_balanced"}),
        ("drop_idle_row", {"capacity_balanced"}),
        ("change_cost", {"cost_balanced", "departments_balanced"}),
        ("late_job", {"jobs_balanced"}),
    ],
)
def test_reconciliation_fires_on_each_kind_of_mismatch(tamper: str, failing: set[str]) -> None:
    built = build(month_usage(), CONFIG, CAPACITY)
    focus, jobs, job_usage = built.focus, built.jobs, month_usage()
    if tamper == "drop_job_line":
        jobs = jobs.filter(pl.col("job_id_raw") != "102")
    elif tamper == "drop_idle_row":
        focus = focus.filter(pl.col("x_ChargeKind") != "idle_capacity").vstack(
            focus.filter(pl.col("x_ChargeKind") == "idle_capacity").slice(1)
        )
    elif tamper == "change_cost":
        focus = focus.with_columns(
            pl.when(pl.col("SkuId") == "A100 3g.40gb")
            .then(pl.col("BilledCost") + Decimal("0.01"))
            .otherwise(pl.col("BilledCost"))
            .alias("BilledCost")
        )
    else:
        job_usage = pl.concat([job_usage, usage(run("999", datetime(2026, 10, 12), 3))])
    rec = reconcile(focus, jobs, job_usage)
    flags = {flag for flag, _ in CHECKS.values()}
    assert {flag for flag in flags if not rec[flag][0]} == failing
    results = {r.check_name: r.passed for r in reconciliation_checks(rec, MONTH, ["marts", "x"])}
    assert {name for name, ok in results.items() if not ok} == {n for n, (f, _) in CHECKS.items() if f in failing}


def test_unpriced_model_fails_the_cost_check() -> None:
    job_usage = usage(run("1", datetime(2026, 10, 2), 4, gpu_model=None))
    built = build(job_usage, CONFIG, CAPACITY)
    rec = reconcile(built.focus, built.jobs, job_usage)
    assert rec["unpriced_rows"][0] == 1 and not rec["cost_balanced"][0]


# ---------------------------------------------------------------- corrections


def _late(job_usage: pl.DataFrame) -> pl.DataFrame:
    """Late data: an extra sacct run, and account 'legacy' now mapped to speech."""
    remapped = job_usage.with_columns(
        pl.when(pl.col("account") == "legacy")
        .then(pl.lit("speech"))
        .otherwise(pl.col("department"))
        .alias("department"),
        pl.when(pl.col("account") == "legacy").then(pl.lit("research")).otherwise(pl.col("division")).alias("division"),
    )
    return pl.concat([remapped, usage(run("107", datetime(2026, 10, 19, 23), 2, gpus=2))])


def test_corrections_move_the_difference_and_never_count_twice() -> None:
    closed = build(month_usage(), CONFIG, CAPACITY)
    now = build(_late(month_usage()), CONFIG, CAPACITY)
    focus_fix = focus_corrections(now.focus, closed.focus, NEXT)
    jobs_fix = job_corrections(now.jobs, closed.jobs, NEXT)
    assert set(focus_fix["ChargeClass"]) == {"Correction"} and set(jobs_fix["charge_class"]) == {"Correction"}
    assert (focus_fix["billing_month"] == NEXT).all() and (focus_fix["charge_month"] == MONTH).all()
    assert (focus_fix["ChargePeriodStart"] < datetime(2026, 11, 1)).all()
    assert focus_fix["ListUnitPrice"].is_null().all()
    for column in ("BilledCost", "PricingQuantity"):
        assert closed.focus[column].sum() + focus_fix[column].sum() == now.focus[column].sum()
    assert closed.jobs["cost"].sum() + jobs_fix["cost"].sum() == now.jobs["cost"].sum()
    unmapped = pl.col("SubAccountId") == "unmapped"  # remapped: its usage and idle share are reversed
    assert focus_fix.filter(unmapped)["BilledCost"].sum() == -closed.focus.filter(unmapped)["BilledCost"].sum()
    assert now.focus.filter(unmapped).is_empty()
    # all three sets together still reconcile (the closed month's rows + corrections = now)
    rec = reconcile(pl.concat([closed.focus, focus_fix]), pl.concat([closed.jobs, jobs_fix]), _late(month_usage()))
    assert (
        rec.select("capacity_balanced", "cost_balanced", "departments_balanced", "jobs_balanced").row(0) == (True,) * 4
    )


def test_rerun_without_new_data_adds_no_correction() -> None:
    closed = build(month_usage(), CONFIG, CAPACITY)
    again = build(month_usage(), CONFIG, CAPACITY)
    assert focus_corrections(again.focus, closed.focus, NEXT).is_empty()
    assert job_corrections(again.jobs, closed.jobs, NEXT).is_empty()


def test_correction_of_a_correction_books_only_the_new_difference() -> None:
    closed = build(month_usage(), CONFIG, CAPACITY)
    first_data = _late(month_usage())
    first = focus_corrections(build(first_data, CONFIG, CAPACITY).focus, closed.focus, NEXT)
    # November closes with the first correction; more late data for October arrives
    second_data = pl.concat([first_data, usage(run("108", datetime(2026, 10, 25), 5, department="speech"))])
    now = build(second_data, CONFIG, CAPACITY)
    second = focus_corrections(now.focus, pl.concat([closed.focus, first]), date(2026, 12, 1))
    assert (second["billing_month"] == date(2026, 12, 1)).all()
    assert second.filter(pl.col("x_ChargeKind") == "usage")["BilledCost"].sum() == Decimal("12.50") + Decimal("1.50")
    assert (
        closed.focus["BilledCost"].sum() + first["BilledCost"].sum() + second["BilledCost"].sum()
        == now.focus["BilledCost"].sum()
    )


def test_price_change_after_close_is_corrected_without_quantity() -> None:
    closed = build(month_usage(), CONFIG, CAPACITY)
    repriced = build(month_usage(), rates(idle_capacity="proportional", qos_multipliers={"high": 1.5}), CAPACITY)
    fix = focus_corrections(repriced.focus, closed.focus, NEXT)
    changed = fix.filter(pl.col("ChargePeriodStart") == datetime(2026, 10, 20, 6, 30, 15))
    assert changed.height > 0  # the later segment disappears: its rows are reversed
    assert closed.focus["BilledCost"].sum() + fix["BilledCost"].sum() == repriced.focus["BilledCost"].sum()


# ---------------------------------------------------------------- review section


def test_section_summarises_and_flags_failures() -> None:
    built = build(month_usage(), CONFIG, CAPACITY)
    rec = reconcile(built.focus, built.jobs, month_usage())
    section = chargeback_section(rec, built.focus, "2026-10", "EUR")
    html = section.render()
    assert section.id == "chargeback" and "All reconciliation checks pass" in html and "FAILED" not in html
    assert "speech" in html and "3,826.3" in html
    failed = chargeback_section(rec.with_columns(pl.lit(False).alias("jobs_balanced")), built.focus, "2026-10", "EUR")
    assert "FAILED" in failed.render() and "every job in one row" in failed.render()
    empty = chargeback_section(rec.clear(), built.focus.clear(), "2026-10", "EUR")
    assert "have not run" in empty.render()


def test_section_names_a_closed_month_and_accepted_gaps() -> None:
    built = build(month_usage(), CONFIG, CAPACITY)
    rec = reconcile(built.focus, built.jobs, month_usage())
    closed = pl.DataFrame(
        {
            "billing_month": [date(2026, 9, 1), date(2026, 10, 1)],
            "closed_at": [datetime(2026, 10, 7, 9), datetime(2026, 11, 8, 10, 30)],
            "accepted_gaps": ["sacct of 09-14 lost", None],
            "gaps": [
                "not landed: cluster 'c1' sacct: 2026-09-14 missing\ncluster 'c1': sample coverage 85.0% below "
                "close.min_coverage 90.0% (marts.mart_cluster_monthly)",
                None,
            ],
            "head_hash": ["a" * 64, "b" * 64],
        }
    )
    assert closed_lines(closed, "2026-10") == [
        "2026-09 was closed with accepted gaps: sacct of 09-14 lost (gaps: not landed: cluster 'c1' sacct: 2026-09-14 "
        "missing; cluster 'c1': sample coverage 85.0% below close.min_coverage 90.0% (marts.mart_cluster_monthly)).",
        f"2026-10 is closed (since 2026-11-08 10:30Z, head hash {'b' * 64}): its ledger rows are frozen; later changes "
        "are Correction rows in the next open month.",
    ]
    html = chargeback_section(rec, built.focus, "2026-10", "EUR", closed).render()
    assert "2026-09 was closed with accepted gaps: sacct of 09-14 lost" in html
    assert "2026-10 is closed" not in chargeback_section(rec, built.focus, "2026-10", "EUR", closed.head(1)).render()
