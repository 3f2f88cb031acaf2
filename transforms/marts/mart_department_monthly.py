"""marts.mart_department_monthly: fct_job_usage summed per cluster, month, division, department,
plus one row per cluster for the capacity no job held.

``utilization`` is active GPU hours over *measured* GPU hours (``measured_gpu_hours``:
the GPU hours of runs with a utilization). Runs without samples have no active/idle
hours; dividing by all GPU hours would count them as idle. ``share_of_capacity`` is
gpu_hours over the cluster's capacity for the month (null if capacity unknown or 0).

Preemption: runs in state ``PREEMPTED`` (``sacct -D`` lists each run of a requeued job
as its own row). ``REQUEUED`` runs are not counted: sacct does not say why a run was
requeued. ``preempted_gpu_hours`` is the GPU-hours those runs held in the month, the work
lost unless the job checkpoints.

Unallocated capacity (infra idle): per cluster with a known capacity, a row with
``department`` and ``division`` = UNALLOCATED and ``gpu_hours`` = capacity - the GPU-hours
of every job row, so a cluster's rows sum to its capacity. It is not clipped at 0: a
negative value means jobs held more than the inventory has, which the blocking check
``capacity_balance`` (pipelines/checks/marts.py) reports. Its job measures are null,
its counts 0.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from transforms.helpers.run_order import in_run_order

UNALLOCATED = "(unallocated)"
PREEMPTED_STATES = ("PREEMPTED",)

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
    "queue_seconds_max": pl.Float64(),
    "preempted_job_count": pl.Int64(),
    "preempted_gpu_hours": pl.Float64(),
    "is_unallocated": pl.Boolean(),
}

GROUP_KEY = ["cluster", "month", "division", "department"]


def _sum_or_null(column: str) -> pl.Expr:
    return pl.when(pl.col(column).count() > 0).then(pl.col(column).sum()).alias(column)


def _department_rows(job_usage: pl.DataFrame) -> pl.DataFrame:
    measured = pl.col("utilization").is_not_null()
    preempted = pl.col("state").is_in(PREEMPTED_STATES)
    queue = pl.col("queue_seconds")
    gpu_hours = pl.col("gpu_hours").fill_null(0.0)
    return (
        in_run_order(job_usage)
        .group_by(GROUP_KEY, maintain_order=True)
        .agg(
            pl.len().alias("job_count"),
            pl.col("user_name").n_unique().alias("user_count"),
            gpu_hours.sum().alias("gpu_hours"),
            gpu_hours.filter(measured).sum().alias("measured_gpu_hours"),
            _sum_or_null("active_gpu_hours"),
            _sum_or_null("idle_gpu_hours"),
            _sum_or_null("zero_util_gpu_hours"),
            _sum_or_null("energy_kwh"),
            queue.quantile(0.5, "linear").alias("queue_seconds_p50"),
            queue.quantile(0.95, "linear").alias("queue_seconds_p95"),
            queue.max().cast(pl.Float64).alias("queue_seconds_max"),
            preempted.sum().alias("preempted_job_count"),
            gpu_hours.filter(preempted).sum().alias("preempted_gpu_hours"),
            pl.lit(False).alias("is_unallocated"),
        )
    )


def _unallocated_rows(departments: pl.DataFrame, capacity: pl.DataFrame, month: object) -> pl.DataFrame:
    """Per cluster with a capacity: capacity - allocated GPU-hours (clusters without jobs too)."""
    # Sorted first: a float sum in a fixed order, so a rerun gives the identical row.
    allocated = (
        departments.sort(GROUP_KEY)
        .group_by("cluster", maintain_order=True)
        .agg(pl.col("gpu_hours").sum().alias("_allocated"))
    )
    return (
        capacity.join(allocated, on="cluster", how="left")
        .filter(pl.col("capacity_gpu_hours").is_not_null())
        .select(
            "cluster",
            pl.lit(month, pl.Date()).alias("month"),
            pl.lit(UNALLOCATED).alias("division"),
            pl.lit(UNALLOCATED).alias("department"),
            pl.lit(0, pl.Int64()).alias("job_count"),
            pl.lit(0, pl.Int64()).alias("user_count"),
            (pl.col("capacity_gpu_hours") - pl.col("_allocated").fill_null(0.0)).alias("gpu_hours"),
            pl.lit(0.0).alias("measured_gpu_hours"),
            pl.lit(0, pl.Int64()).alias("preempted_job_count"),
            pl.lit(0.0).alias("preempted_gpu_hours"),
            pl.lit(True).alias("is_unallocated"),
        )
    )


def mart_department_monthly(
    job_usage: pl.DataFrame, period_start: datetime, capacity_gpu_hours: pl.DataFrame
) -> pl.DataFrame:
    """Department rows and one unallocated row per cluster (SCHEMA) for the month at ``period_start``.

    ``capacity_gpu_hours``: (cluster, capacity_gpu_hours) for that month.
    """
    month = period_start.date()
    departments = _department_rows(job_usage.filter(pl.col("month") == month))
    capacity = capacity_gpu_hours.select("cluster", "capacity_gpu_hours").unique("cluster")
    rows = pl.concat([departments, _unallocated_rows(departments, capacity, month)], how="diagonal_relaxed")
    measured_hours = pl.col("measured_gpu_hours")
    capacity_hours = pl.col("capacity_gpu_hours")
    return (
        rows.join(capacity, on="cluster", how="left")
        .with_columns(
            utilization=pl.when(measured_hours > 0).then(pl.col("active_gpu_hours") / measured_hours),
            share_of_capacity=pl.when(capacity_hours > 0).then(pl.col("gpu_hours") / capacity_hours),
        )
        .select(list(SCHEMA))
        .cast(SCHEMA)
        .sort(["cluster", "is_unallocated", "month", "division", "department"])
    )
