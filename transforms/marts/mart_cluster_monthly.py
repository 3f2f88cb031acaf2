"""``marts.mart_cluster_monthly``: one row per cluster and month, the review's headline numbers.

Capacity is the inventory's GPU count (MIG instances as their fractions) times the hours of
the period; infra idle is what no job held (capacity - allocated), workload idle what jobs
held without using it. A cluster without a scheduler (metrics only) has no jobs: its
utilization and sample coverage are its GPUs' (``device_activity``), not its jobs'.
"""

from __future__ import annotations

from datetime import date, datetime

import polars as pl

from transforms.helpers.run_order import in_run_order

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "month": pl.Date(),
    "capacity_gpus": pl.Float64(),
    "capacity_gpu_hours": pl.Float64(),
    "allocated_gpu_hours": pl.Float64(),
    "active_gpu_hours": pl.Float64(),
    "idle_gpu_hours": pl.Float64(),
    "infra_idle_gpu_hours": pl.Float64(),
    "zero_util_gpu_hours": pl.Float64(),
    "allocation_ratio": pl.Float64(),
    "utilization": pl.Float64(),
    "job_count": pl.Int64(),
    "jobs_without_samples": pl.Int64(),
    "sample_coverage": pl.Float64(),
    "queue_seconds_p50": pl.Float64(),
    "queue_seconds_p95": pl.Float64(),
    "energy_kwh": pl.Float64(),
}


def capacity_gpu_hours(inventory: pl.DataFrame, period_start: datetime, period_end: datetime) -> pl.DataFrame:
    """Per cluster: GPUs (MIG instances as fractions, the mean over the hours) and GPU-hours
    available in the period. An inventory with an ``hour`` column gives each hour's rows."""
    hours = (period_end - period_start).total_seconds() / 3600
    if "hour" not in inventory.columns:
        inventory = inventory.with_columns(pl.lit(None, pl.Datetime("us")).alias("hour"))
        weight = hours
    else:
        weight = 1.0
    # Hours of equal capacity are multiplied, not added one by one (the config's: GPUs x hours).
    return (
        inventory.group_by("cluster", "hour")
        .agg(pl.col("gpu_fraction").sum().alias("_gpus"))
        .group_by("cluster", "_gpus")
        .agg(pl.len().alias("_hours"))
        .sort("cluster", "_gpus")
        .group_by("cluster", maintain_order=True)
        .agg(
            (pl.col("_gpus") * (pl.col("_hours") * weight)).sum().alias("capacity_gpu_hours"),
            pl.when(pl.len() == 1).then(pl.col("_gpus").first()).alias("capacity_gpus"),
        )
        .with_columns(pl.col("capacity_gpus").fill_null(pl.col("capacity_gpu_hours") / hours))
        .select("cluster", "capacity_gpus", "capacity_gpu_hours")
        .sort("cluster")
    )


DEVICE_ACTIVITY_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "best_sum": pl.Float64(),  # intermediate.int_gpu_minutes_attributed, every row of the cluster
    "best_n": pl.Float64(),
    "n_samples": pl.Float64(),  # marts.fct_gpu_hourly, every instance-hour of the inventory
    "expected_samples": pl.Float64(),
}


def mart_cluster_monthly(
    job_usage: pl.DataFrame, capacity: pl.DataFrame, month: date, device_activity: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Headline numbers per cluster; clusters with capacity but no jobs get zero rows, not none.

    ``utilization`` is active / allocated GPU-hours over the jobs that have samples, so jobs
    without samples neither count as idle nor as busy (they are counted separately).
    ``device_activity`` (``DEVICE_ACTIVITY_SCHEMA``): the clusters without a scheduler, whose
    ``utilization`` is the best-signal mean of all their samples and ``sample_coverage`` the
    samples present / expected over the inventory's GPU-hours.
    """
    started = in_run_order(job_usage).filter(pl.col("start_time").is_not_null())
    per_cluster = started.group_by("cluster", maintain_order=True).agg(
        pl.col("gpu_hours").sum().alias("allocated_gpu_hours"),
        pl.col("active_gpu_hours").sum().alias("active_gpu_hours"),
        pl.col("idle_gpu_hours").sum().alias("idle_gpu_hours"),
        pl.col("zero_util_gpu_hours").sum().alias("zero_util_gpu_hours"),
        pl.col("gpu_hours").filter(pl.col("utilization").is_not_null()).sum().alias("_measured_gpu_hours"),
        pl.len().cast(pl.Int64()).alias("job_count"),
        (pl.col("n_samples").fill_null(0) == 0).sum().cast(pl.Int64()).alias("jobs_without_samples"),
        pl.col("n_samples").sum().alias("_n"),
        pl.col("expected_samples").sum().alias("_expected"),
        pl.col("queue_seconds").quantile(0.5, "linear").alias("queue_seconds_p50"),
        pl.col("queue_seconds").quantile(0.95, "linear").alias("queue_seconds_p95"),
        pl.col("energy_kwh").sum().alias("energy_kwh"),
    )
    joined = (
        capacity.join(per_cluster, on="cluster", how="left")
        .with_columns(
            pl.col(c).fill_null(0.0)
            for c in ("allocated_gpu_hours", "active_gpu_hours", "idle_gpu_hours", "zero_util_gpu_hours", "energy_kwh")
        )
        .with_columns(pl.col("job_count", "jobs_without_samples").fill_null(0))
    )
    rows = joined.with_columns(
        pl.lit(month).alias("month"),
        (pl.col("capacity_gpu_hours") - pl.col("allocated_gpu_hours"))
        .clip(lower_bound=0)
        .alias("infra_idle_gpu_hours"),
        _ratio("allocated_gpu_hours", "capacity_gpu_hours").alias("allocation_ratio"),
        _ratio("active_gpu_hours", "_measured_gpu_hours").alias("utilization"),
        _ratio("_n", "_expected").clip(upper_bound=1.0).alias("sample_coverage"),
    )
    if device_activity is not None and device_activity.height:
        devices = device_activity.cast(DEVICE_ACTIVITY_SCHEMA).with_columns(
            _ratio("best_sum", "best_n").alias("_device_utilization"),
            _ratio("n_samples", "expected_samples").clip(upper_bound=1.0).alias("_device_coverage"),
        )
        rows = rows.join(devices.select("cluster", "_device_utilization", "_device_coverage"), on="cluster", how="left")
        metrics_only = pl.col("cluster").is_in(devices.get_column("cluster").implode())
        rows = rows.with_columns(
            pl.when(metrics_only)
            .then(pl.col("_device_utilization"))
            .otherwise(pl.col("utilization"))
            .alias("utilization"),
            pl.when(metrics_only)
            .then(pl.col("_device_coverage"))
            .otherwise(pl.col("sample_coverage"))
            .alias("sample_coverage"),
        )
    return rows.select([pl.col(c).cast(t) for c, t in SCHEMA.items()]).sort("cluster")


def _ratio(numerator: str, denominator: str) -> pl.Expr:
    return pl.when(pl.col(denominator) > 0).then(pl.col(numerator) / pl.col(denominator)).otherwise(None)
