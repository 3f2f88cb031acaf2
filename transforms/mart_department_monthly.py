"""marts.mart_department_monthly: fct_job_usage summed per cluster, month, division, department.

``utilization`` is active GPU hours over *measured* GPU hours (``measured_gpu_hours``:
the GPU hours of runs with a utilization). Runs without samples have no active/idle
hours; dividing by all GPU hours would count them as idle. ``share_of_capacity`` is
gpu_hours over the cluster's capacity for the month (null if capacity unknown or 0).
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "month": pl.Date(),
    "division": pl.String(),
    "department": pl.String(),
    "job_count": pl.Int64(),
    "user_count": pl.Int64(),
    "gpu_hours": pl.Float64(),
    "measured_gpu_hours": pl.Float64(),
    "active_gpu_hours": pl.Float64(),
    "idle_gpu_hours": pl.Float64(),
    "zero_util_gpu_hours": pl.Float64(),
    "utilization": pl.Float64(),
    "energy_kwh": pl.Float64(),
    "queue_seconds_p50": pl.Float64(),
    "queue_seconds_p95": pl.Float64(),
    "share_of_capacity": pl.Float64(),
}

GROUP_KEY = ["cluster", "month", "division", "department"]


def _sum_or_null(column: str) -> pl.Expr:
    return pl.when(pl.col(column).count() > 0).then(pl.col(column).sum()).alias(column)


def mart_department_monthly(
    job_usage: pl.DataFrame, period_start: datetime, capacity_gpu_hours: pl.DataFrame
) -> pl.DataFrame:
    """Department rows (SCHEMA) for the month starting at ``period_start``.

    ``capacity_gpu_hours``: (cluster, capacity_gpu_hours) for that month.
    """
    measured = pl.col("utilization").is_not_null()
    queue = pl.col("queue_seconds")
    grouped = (
        job_usage.filter(pl.col("month") == period_start.date())
        .group_by(GROUP_KEY)
        .agg(
            pl.len().alias("job_count"),
            pl.col("user_name").n_unique().alias("user_count"),
            pl.col("gpu_hours").sum(),
            pl.col("gpu_hours").filter(measured).sum().alias("measured_gpu_hours"),
            _sum_or_null("active_gpu_hours"),
            _sum_or_null("idle_gpu_hours"),
            _sum_or_null("zero_util_gpu_hours"),
            _sum_or_null("energy_kwh"),
            queue.quantile(0.5, "linear").alias("queue_seconds_p50"),
            queue.quantile(0.95, "linear").alias("queue_seconds_p95"),
        )
    )
    capacity = capacity_gpu_hours.select("cluster", "capacity_gpu_hours").unique("cluster")
    measured_hours = pl.col("measured_gpu_hours")
    capacity_hours = pl.col("capacity_gpu_hours")
    return (
        grouped.join(capacity, on="cluster", how="left")
        .with_columns(
            utilization=pl.when(measured_hours > 0).then(pl.col("active_gpu_hours") / measured_hours),
            share_of_capacity=pl.when(capacity_hours > 0).then(pl.col("gpu_hours") / capacity_hours),
        )
        .select(list(SCHEMA))
        .cast(SCHEMA)
        .sort(GROUP_KEY)
    )
