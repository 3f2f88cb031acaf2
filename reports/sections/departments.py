"""Departments on the review page: the index of department pages, card-hours and cost,
quota against use (borrowing), and the low-efficiency list."""

from __future__ import annotations

from functools import partial

import polars as pl

from reports import figures
from reports.data import ReviewInputs, hours_in_month
from reports.html import Column, Link, Section, fmt_float, fmt_int, fmt_minutes, fmt_pct, table
from reports.paths import department_href
from reports.pricing import priced_sum

fmt_hours = partial(fmt_float, decimals=1)
fmt_money = partial(fmt_float, decimals=2)


def department_costs(inputs: ReviewInputs) -> pl.DataFrame:
    """Per cluster and department: ``cost`` (all GPU-hours) and ``idle_cost`` (dated list prices)."""
    return inputs.jobs.group_by("cluster", "department").agg(priced_sum("cost"), priced_sum("idle_cost"))


def department_rows(inputs: ReviewInputs) -> pl.DataFrame:
    """This month's department rows with their costs, largest first."""
    return (
        inputs.this_month(inputs.departments)
        .join(department_costs(inputs), on=["cluster", "department"], how="left", nulls_equal=True)
        .sort(["cluster", "gpu_hours", "department"], descending=[False, True, False], nulls_last=True)
    )


def _page_link(department: str | None) -> Link | str:
    if department is None:
        return "n/a"
    return Link(figures.department_label(department), department_href(department))


def _needs_mapping(row: dict) -> str | None:
    return "needs-mapping" if row["department"] == figures.UNMAPPED else None


def department_index_section(inputs: ReviewInputs) -> Section | None:
    """Links to every department's page (one per department, all clusters on it)."""
    names = sorted(set(department_rows(inputs)["department"].drop_nulls()))
    if not names:
        return None
    values = {"pages": [_page_link(name) for name in names]}
    return Section("department-index", "Department pages", "sections/department_index.html", values, "compact")


def department_columns(inputs: ReviewInputs, currency: str, linked: bool = True) -> list[Column]:
    name = Column("department", "department", _page_link if linked else figures.department_label, wrap=True)
    columns = [
        Column("division", "division", wrap=True),
        name,
        Column("job_count", "jobs", fmt_int, True),
        Column("user_count", "users", fmt_int, True),
        Column("gpu_hours", "GPU-hours", fmt_hours, True),
        Column("cost", f"cost ({currency})", fmt_money, True),
        Column("utilization", "utilization (%)", fmt_pct, True),
        Column("idle_gpu_hours", "idle GPU-hours", fmt_hours, True),
        Column("idle_cost", f"idle cost ({currency})", fmt_money, True),
        Column("zero_util_gpu_hours", "zero-util GPU-hours", fmt_hours, True),
        Column("share_of_capacity", "share of capacity (%)", fmt_pct, True),
        Column("energy_kwh", "energy (kWh)", fmt_hours, True),
        Column("queue_seconds_p50", "queue p50 (min)", fmt_minutes, True),
        Column("queue_seconds_p95", "queue p95 (min)", fmt_minutes, True),
    ]
    return ([Column("cluster", "cluster")] if inputs.multi_cluster else []) + columns


def department_table_section(inputs: ReviewInputs) -> Section:
    columns = department_columns(inputs, inputs.settings.currency or "currency")
    rows = table(department_rows(inputs), columns, row_class=_needs_mapping)
    return Section("departments", "Departments", "sections/departments.html", {"table": rows})


def quota_frame(inputs: ReviewInputs) -> pl.DataFrame:
    """Per department over all clusters: quota GPUs, GPUs used on average, borrowed.

    use = GPU-hours / hours in the month; use above the quota is borrowed (GPUs and
    GPU-hours); a department without a quota entry has quota 0, so all its use is borrowed.
    """
    hours = hours_in_month(inputs.month)
    quotas = inputs.settings.quotas or {}
    used = (
        inputs.this_month(inputs.departments)
        .group_by("department")
        .agg(pl.col("gpu_hours").sum())
        .join(
            pl.DataFrame(
                {"department": list(quotas), "quota_gpus": [float(q) for q in quotas.values()]},
                schema={"department": pl.String, "quota_gpus": pl.Float64},
            ),
            on="department",
            how="full",
            coalesce=True,
        )
        .with_columns(pl.col("gpu_hours").fill_null(0.0), pl.col("quota_gpus").fill_null(0.0))
    )
    return used.with_columns(
        (pl.col("gpu_hours") / hours).alias("used_gpus"),
        pl.when(pl.col("quota_gpus") > 0).then(pl.col("gpu_hours") / hours / pl.col("quota_gpus")).alias("quota_use"),
        ((pl.col("gpu_hours") / hours - pl.col("quota_gpus")).clip(lower_bound=0)).alias("borrowed_gpus"),
        ((pl.col("gpu_hours") - pl.col("quota_gpus") * hours).clip(lower_bound=0)).alias("borrowed_gpu_hours"),
    ).sort(["borrowed_gpu_hours", "department"], descending=[True, False])


QUOTA_COLUMNS = [
    Column("department", "department", figures.department_label, wrap=True),
    Column("quota_gpus", "quota (GPUs)", fmt_hours, True),
    Column("used_gpus", "used (GPUs, month average)", fmt_hours, True),
    Column("quota_use", "use of quota (%)", fmt_pct, True),
    Column("gpu_hours", "GPU-hours", fmt_hours, True),
    Column("borrowed_gpus", "borrowed (GPUs)", fmt_hours, True),
    Column("borrowed_gpu_hours", "borrowed GPU-hours", fmt_hours, True),
]


def capacity_gpus(inputs: ReviewInputs) -> float:
    """Capacity of all clusters in GPUs (capacity GPU-hours / hours in the month)."""
    capacity = inputs.this_month(inputs.clusters)["capacity_gpu_hours"].sum()
    return float(capacity or 0.0) / hours_in_month(inputs.month)


def quota_section(inputs: ReviewInputs) -> Section:
    if inputs.settings.quotas is None:
        return Section("quotas", "Quota against use", "sections/quotas.html", {"table": None})
    promised = sum(inputs.settings.quotas.values())
    capacity = capacity_gpus(inputs)
    values = {
        "promised": f"{promised:,.1f}",
        "capacity": f"{capacity:,.1f}",
        "ratio": f"{promised / capacity:.2f}" if capacity > 0 else "n/a",
        "allowed": f"{inputs.settings.overcommit_ratio:.2f}",
        "table": table(quota_frame(inputs), QUOTA_COLUMNS),
    }
    return Section("quotas", "Quota against use", "sections/quotas.html", values)


def low_efficiency_rule(inputs: ReviewInputs) -> dict:
    """The low-efficiency thresholds as the pages show them."""
    s = inputs.settings
    return {
        "min_gpu_hours": f"{s.low_efficiency_gpu_hours:,.0f}",
        "max_utilization": f"{s.low_efficiency_utilization * 100:.0f}",
    }


def low_efficiency_frame(inputs: ReviewInputs) -> pl.DataFrame:
    """Departments (all clusters) with >= the GPU-hours threshold at <= the utilization one."""
    s = inputs.settings
    return (
        inputs.this_month(inputs.departments)
        .group_by("department")
        .agg(
            pl.col("gpu_hours").sum(),
            pl.col("measured_gpu_hours").sum(),
            pl.col("active_gpu_hours").sum(),
            pl.col("idle_gpu_hours").sum(),
        )
        .with_columns(
            pl.when(pl.col("measured_gpu_hours") > 0)
            .then(pl.col("active_gpu_hours") / pl.col("measured_gpu_hours"))
            .alias("utilization")
        )
        .filter(
            (pl.col("gpu_hours") >= s.low_efficiency_gpu_hours)
            & (pl.col("utilization") <= s.low_efficiency_utilization)
        )
        .sort(["idle_gpu_hours", "department"], descending=[True, False])
    )


def low_efficiency_section(inputs: ReviewInputs) -> Section:
    columns = [
        Column("department", "department", figures.department_label, wrap=True),
        Column("gpu_hours", "GPU-hours", fmt_hours, True),
        Column("utilization", "utilization (%)", fmt_pct, True),
        Column("idle_gpu_hours", "idle GPU-hours", fmt_hours, True),
    ]
    values = low_efficiency_rule(inputs) | {"table": table(low_efficiency_frame(inputs), columns)}
    return Section("low-efficiency-departments", "Low-efficiency departments", "sections/low_efficiency.html", values)
