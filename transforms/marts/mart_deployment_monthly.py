"""marts.mart_deployment_monthly: Kubernetes inference Deployments rolled up per month.

Each replica pod of a Deployment is its own job in ``fct_job_usage`` (``scheduler =
'kubernetes'``, ``job_id = namespace/pod``); this mart sums them per (cluster, namespace,
Deployment): the replica pods that ran in the month, their GPU-hours, utilization and idle,
replica-hours, and the largest number of replicas running at once.

- ``deployment_name``: the ReplicaSet owner without its pod-template hash
  (``staging.stg_kube__jobs``), so the ReplicaSets of a rollout count as one Deployment.
- ``peak_replicas``: the most replica pods running at one instant inside the month (a pod
  ending at the instant another starts is not counted twice).
- ``department``/``division``: those of the Deployment's latest-started replica.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

KEY = ["cluster", "namespace", "deployment_name"]
SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "month": pl.Date(),
    "namespace": pl.String(),
    "deployment_name": pl.String(),
    "department": pl.String(),
    "division": pl.String(),
    "gpu_model": pl.String(),
    "replica_pods": pl.Int64(),
    "replica_hours": pl.Float64(),
    "mean_replicas": pl.Float64(),
    "peak_replicas": pl.Int64(),
    "gpu_hours": pl.Float64(),
    "measured_gpu_hours": pl.Float64(),
    "active_gpu_hours": pl.Float64(),
    "idle_gpu_hours": pl.Float64(),
    "utilization": pl.Float64(),
    "energy_kwh": pl.Float64(),
}


def _clipped_pods(pods: pl.DataFrame, period_start: datetime, period_end: datetime) -> pl.DataFrame:
    """Replica pods of Deployments with their [start, end) inside the period (empty spans dropped)."""
    return (
        pods.filter(pl.col("deployment_name").is_not_null() & pl.col("start_time").is_not_null())
        .select(
            *KEY,
            _start=pl.max_horizontal(pl.col("start_time"), pl.lit(period_start)),
            _end=pl.min_horizontal(pl.col("end_time").fill_null(period_end), pl.lit(period_end)),
        )
        .filter(pl.col("_end") > pl.col("_start"))
    )


def _replicas(pods: pl.DataFrame) -> pl.DataFrame:
    """Per Deployment: replica-hours and the peak of replicas running at once."""
    events = pl.concat(
        [
            pods.select(*KEY, t=pl.col("_start"), delta=pl.lit(1, pl.Int64)),
            pods.select(*KEY, t=pl.col("_end"), delta=pl.lit(-1, pl.Int64)),
        ]
    ).sort(*KEY, "t", "delta")  # ends before starts at the same instant
    peak = (
        events.with_columns(running=pl.col("delta").cum_sum().over(KEY))
        .group_by(KEY)
        .agg(peak_replicas=pl.col("running").max())
    )
    hours = pods.group_by(KEY).agg(
        replica_hours=((pl.col("_end") - pl.col("_start")).dt.total_microseconds() / 3.6e9).sum()
    )
    return hours.join(peak, on=KEY)


def mart_deployment_monthly(
    usage: pl.DataFrame, kube_jobs: pl.DataFrame, kube_pods: pl.DataFrame, period_start: datetime, period_end: datetime
) -> pl.DataFrame:
    """Rows in SCHEMA. ``usage``: fct_job_usage rows of the period; ``kube_jobs``/``kube_pods``:
    stg_kube__jobs / stg_kube__pods rows of the month."""
    deployments = (
        kube_jobs.filter(pl.col("deployment_name").is_not_null())
        .select("cluster", "job_id", "namespace", "deployment_name")
        .unique(["cluster", "job_id"])
    )
    jobs = usage.filter((pl.col("scheduler") == "kubernetes") & pl.col("start_time").is_not_null()).join(
        deployments, on=["cluster", "job_id"]
    )
    measured = pl.when(pl.col("utilization").is_not_null()).then(pl.col("gpu_hours"))
    rolled = jobs.group_by(KEY).agg(
        department=pl.col("department").sort_by("start_time").last(),
        division=pl.col("division").sort_by("start_time").last(),
        gpu_model=pl.col("gpu_model").drop_nulls().unique().sort().str.join(","),
        replica_pods=pl.len().cast(pl.Int64),
        gpu_hours=pl.col("gpu_hours").sum(),
        measured_gpu_hours=measured.sum(),
        active_gpu_hours=pl.col("active_gpu_hours").sum(),
        energy_kwh=pl.col("energy_kwh").sum(),
    )
    month_hours = (period_end - period_start).total_seconds() / 3600
    return (
        rolled.join(_replicas(_clipped_pods(kube_pods, period_start, period_end)), on=KEY, how="left")
        .with_columns(
            pl.col("replica_hours").fill_null(0.0),
            pl.col("peak_replicas").fill_null(0),
            idle_gpu_hours=pl.col("measured_gpu_hours") - pl.col("active_gpu_hours"),
            utilization=pl.when(pl.col("measured_gpu_hours") > 0).then(
                pl.col("active_gpu_hours") / pl.col("measured_gpu_hours")
            ),
            month=pl.lit(period_start.date()),
        )
        .with_columns(mean_replicas=pl.col("replica_hours") / month_hours)
        .select(list(SCHEMA))
        .cast(SCHEMA)
        .sort(KEY)
    )
