"""marts.mart_chargeback_reconciliation: does a charge month's chargeback add up?

One row per cluster and charge month, over every FOCUS row and job line of that charge
month (the regular ones and any corrections, whatever billing month books them):

- capacity: charged GPU-hours (usage rows) + idle GPU-hours (idle-capacity rows) + the platform's
  down and planned-down GPU-hours (their own rows, never charged to departments) = capacity
  GPU-hours (per GPU model label rounded half up to 1e-6), exactly;
- cost: every non-correction row's BilledCost = round_half_up(PricingQuantity x
  ContractedUnitPrice, 2), List/Contracted/Effective cost = BilledCost, and every row priced;
- departments: per department and charge period, usage rows' GPU-hours and cost = the job
  detail's, exactly;
- jobs: every run of fct_job_usage with GPU-hours has net detail GPU-hours equal to its own
  (rounded to 1e-6), no detail line belongs to a run that is not there, and no run has two
  regular lines for one price segment.
"""

from __future__ import annotations

from datetime import date
from decimal import ROUND_HALF_UP, Decimal

import polars as pl

from contracts.capacity_states import PLATFORM_STATES
from contracts.chargeback import MONEY, QUANTITY
from transforms.helpers.charge_money import float_micro, scaled_decimal, to_scaled_int
from transforms.marts.charge_platform import CHARGE_KINDS, IDLE_KIND

PLATFORM_COLUMNS: dict[str, str] = {state: f"{state}_gpu_hours" for state in PLATFORM_STATES}

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "month": pl.Date(),
    "capacity_gpu_hours": QUANTITY,
    "charged_gpu_hours": QUANTITY,
    "idle_gpu_hours": QUANTITY,
    "job_usage_gpu_hours": QUANTITY,
    "billed_cost": MONEY,
    "usage_cost": MONEY,
    "idle_cost": MONEY,
    "correction_cost": MONEY,
    "job_detail_cost": MONEY,
    "misrounded_rows": pl.Int64(),
    "unpriced_rows": pl.Int64(),
    "departments_mismatched": pl.Int64(),
    "jobs_with_gpu_hours": pl.Int64(),
    "jobs_mismatched": pl.Int64(),
    "duplicate_lines": pl.Int64(),
    "capacity_balanced": pl.Boolean(),
    "cost_balanced": pl.Boolean(),
    "departments_balanced": pl.Boolean(),
    "jobs_balanced": pl.Boolean(),
    **{column: QUANTITY for column in PLATFORM_COLUMNS.values()},
    "platform_cost": MONEY,
}
RUN = ["cluster", "job_id_raw", "start_time"]
_CENT = Decimal("0.01")


def _misrounded(focus: pl.DataFrame) -> pl.DataFrame:
    """Per cluster: regular rows whose costs are not their quantity x unit price to the cent."""
    rows = focus.filter(pl.col("ChargeClass").is_null()).select(
        "cluster",
        "PricingQuantity",
        "ContractedUnitPrice",
        "ListUnitPrice",
        "BilledCost",
        "ListCost",
        "ContractedCost",
        "EffectiveCost",
    )
    bad: dict[str, int] = {}
    unpriced: dict[str, int] = {}
    for r in rows.iter_rows(named=True):
        cluster = r["cluster"]
        if r["ContractedUnitPrice"] is None or r["ListUnitPrice"] is None:
            unpriced[cluster] = unpriced.get(cluster, 0) + 1
            continue
        expected = (r["PricingQuantity"] * r["ContractedUnitPrice"]).quantize(_CENT, rounding=ROUND_HALF_UP)
        listed = (r["PricingQuantity"] * r["ListUnitPrice"]).quantize(_CENT, rounding=ROUND_HALF_UP)
        costs = {r["BilledCost"], r["ContractedCost"], r["EffectiveCost"]}
        if costs != {expected} or r["ListCost"] != listed:
            bad[cluster] = bad.get(cluster, 0) + 1
    clusters = sorted(set(rows.get_column("cluster").to_list()))
    return pl.DataFrame(
        {
            "cluster": clusters,
            "misrounded_rows": [bad.get(c, 0) for c in clusters],
            "unpriced_rows": [unpriced.get(c, 0) for c in clusters],
        },
        schema={"cluster": pl.String, "misrounded_rows": pl.Int64, "unpriced_rows": pl.Int64},
    )


def _department_mismatches(focus: pl.DataFrame, jobs: pl.DataFrame) -> pl.DataFrame:
    keys = ["cluster", "department", "charge_period_start"]
    rows = (
        focus.filter(pl.col("x_ChargeKind") == "usage")
        .group_by(
            "cluster",
            pl.col("SubAccountId").alias("department"),
            pl.col("ChargePeriodStart").alias("charge_period_start"),
        )
        .agg(
            to_scaled_int(pl.col("PricingQuantity"), 6).sum().alias("q"),
            to_scaled_int(pl.col("BilledCost"), 2).sum().alias("c"),
        )
    )
    detail = jobs.group_by(keys).agg(
        to_scaled_int(pl.col("gpu_hours"), 6).sum().alias("q"), to_scaled_int(pl.col("cost"), 2).sum().alias("c")
    )
    joined = rows.join(detail, on=keys, how="full", coalesce=True, suffix="_jobs", nulls_equal=True).fill_null(0)
    differs = (pl.col("q") != pl.col("q_jobs")) | (pl.col("c") != pl.col("c_jobs"))
    return joined.group_by("cluster").agg(differs.sum().cast(pl.Int64).alias("departments_mismatched"))


def _job_mismatches(jobs: pl.DataFrame, usage: pl.DataFrame) -> pl.DataFrame:
    runs = usage.filter(pl.col("gpu_hours").fill_null(0) > 0).select(
        *RUN, float_micro(pl.col("gpu_hours")).alias("expected")
    )
    net = jobs.group_by(RUN).agg(to_scaled_int(pl.col("gpu_hours"), 6).sum().alias("net"))
    joined = runs.join(net, on=RUN, how="full", coalesce=True, nulls_equal=True).fill_null(0)
    regular = jobs.filter(pl.col("charge_class").is_null())
    duplicates = regular.group_by([*RUN, "charge_period_start"]).len().filter(pl.col("len") > 1)
    return (
        joined.group_by("cluster")
        .agg(
            (pl.col("expected") > 0).sum().cast(pl.Int64).alias("jobs_with_gpu_hours"),
            (pl.col("expected") != pl.col("net")).sum().cast(pl.Int64).alias("jobs_mismatched"),
            pl.col("expected").sum().alias("_job_usage"),
        )
        .join(
            duplicates.group_by("cluster").agg(pl.len().cast(pl.Int64).alias("duplicate_lines")),
            on="cluster",
            how="left",
        )
    )


def mart_chargeback_reconciliation(
    focus: pl.DataFrame, jobs: pl.DataFrame, job_usage: pl.DataFrame, capacity: pl.DataFrame, month: date
) -> pl.DataFrame:
    """SCHEMA rows for ``month``. ``focus``/``jobs``: every fct_chargeback_focus row and
    fct_chargeback_jobs line of the charge month; ``job_usage``: its fct_job_usage rows;
    ``capacity``: cluster, gpu_model, capacity_gpu_hours (float) as given to int_charge_idle."""

    def q(kind):
        return to_scaled_int(pl.col("PricingQuantity"), 6).filter(pl.col("x_ChargeKind") == kind).sum()

    def c(cond):
        return to_scaled_int(pl.col("BilledCost"), 2).filter(cond).sum()

    totals = focus.group_by("cluster").agg(
        q("usage").alias("_charged"),
        q(IDLE_KIND).alias("_idle"),
        *[q(CHARGE_KINDS[state]).alias(f"_{state}") for state in PLATFORM_STATES],
        c(pl.col("x_ChargeKind").is_in([CHARGE_KINDS[state] for state in PLATFORM_STATES])).alias("_platform_cost"),
        c(pl.lit(True)).alias("_billed"),
        c(pl.col("x_ChargeKind") == "usage").alias("_usage_cost"),
        c(pl.col("x_ChargeKind") == IDLE_KIND).alias("_idle_cost"),
        c(pl.col("ChargeClass") == "Correction").alias("_correction_cost"),
    )
    cap = capacity.group_by("cluster").agg(float_micro(pl.col("capacity_gpu_hours")).sum().alias("_capacity"))
    detail = jobs.group_by("cluster").agg(to_scaled_int(pl.col("cost"), 2).sum().alias("_detail_cost"))
    clusters = pl.concat([f.select("cluster") for f in (totals, cap, job_usage.select("cluster"))]).unique()
    rows = clusters
    for part in (
        totals,
        cap,
        detail,
        _misrounded(focus),
        _department_mismatches(focus, jobs),
        _job_mismatches(jobs, job_usage),
    ):
        rows = rows.join(part, on="cluster", how="left")
    rows = rows.fill_null(0)

    def dec6(name):
        return scaled_decimal(pl.col(name), 6)

    def dec2(name):
        return scaled_decimal(pl.col(name), 2)

    return (
        rows.with_columns(
            pl.lit(month).alias("month"),
            dec6("_capacity").alias("capacity_gpu_hours"),
            dec6("_charged").alias("charged_gpu_hours"),
            dec6("_idle").alias("idle_gpu_hours"),
            dec6("_job_usage").alias("job_usage_gpu_hours"),
            dec2("_billed").alias("billed_cost"),
            dec2("_usage_cost").alias("usage_cost"),
            dec2("_idle_cost").alias("idle_cost"),
            dec2("_correction_cost").alias("correction_cost"),
            dec2("_detail_cost").alias("job_detail_cost"),
            *[dec6(f"_{state}").alias(column) for state, column in PLATFORM_COLUMNS.items()],
            dec2("_platform_cost").alias("platform_cost"),
            (pl.sum_horizontal("_charged", "_idle", *[f"_{s}" for s in PLATFORM_STATES]) == pl.col("_capacity")).alias(
                "capacity_balanced"
            ),
            ((pl.col("misrounded_rows") == 0) & (pl.col("unpriced_rows") == 0)).alias("cost_balanced"),
            ((pl.col("departments_mismatched") == 0) & (pl.col("_usage_cost") == pl.col("_detail_cost"))).alias(
                "departments_balanced"
            ),
            (
                (pl.col("jobs_mismatched") == 0)
                & (pl.col("duplicate_lines") == 0)
                & (pl.col("_charged") == pl.col("_job_usage"))
            ).alias("jobs_balanced"),
        )
        .select(pl.col(n).cast(t) for n, t in SCHEMA.items())
        .sort("cluster")
    )
