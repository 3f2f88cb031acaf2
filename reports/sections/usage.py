"""Per-partition and per-GPU-model views of the month."""

from __future__ import annotations

from functools import partial

import polars as pl

from reports.costs import unpriced_models
from reports.data import ReviewInputs
from reports.html import Column, Section, fmt_float, fmt_int, fmt_minutes, fmt_pct, table
from reports.pricing import priced_sum

fmt_hours = partial(fmt_float, decimals=1)
fmt_money = partial(fmt_float, decimals=2)


def _job_measures() -> list[pl.Expr]:
    measured = pl.when(pl.col("utilization").is_not_null()).then(pl.col("gpu_hours"))
    return [
        pl.len().alias("job_count"),
        pl.col("gpu_hours").sum(),
        pl.col("idle_gpu_hours").sum(),
        priced_sum("cost"),
        priced_sum("idle_cost"),
        (pl.col("active_gpu_hours").sum() / measured.sum()).alias("utilization"),
        pl.col("queue_seconds").quantile(0.5, interpolation="linear").alias("queue_seconds_p50"),
        pl.col("queue_seconds").quantile(0.95, interpolation="linear").alias("queue_seconds_p95"),
    ]


def partition_frame(inputs: ReviewInputs) -> pl.DataFrame:
    """Per cluster and partition: jobs, GPU-hours, cost, utilization, idle, queue times."""
    return (
        inputs.jobs.group_by("cluster", "partition_name")
        .agg(_job_measures())
        .with_columns(pl.when(pl.col("utilization").is_finite()).then(pl.col("utilization")))
        .sort(["cluster", "gpu_hours", "partition_name"], descending=[False, True, False], nulls_last=True)
    )


def model_frame(inputs: ReviewInputs) -> pl.DataFrame:
    """Per cluster and GPU model: capacity and allocation (from the hourly fact) beside the
    jobs' GPU-hours, cost and utilization."""
    capacity = (
        inputs.this_month(inputs.models)
        .group_by("cluster", "gpu_model")
        .agg(pl.col("capacity_gpu_hours").sum(), pl.col("allocated_gpu_hours").sum())
    )
    jobs = inputs.jobs.group_by("cluster", "gpu_model").agg(_job_measures())
    return (
        capacity.join(jobs, on=["cluster", "gpu_model"], how="full", coalesce=True, nulls_equal=True)
        .with_columns(
            pl.when(pl.col("capacity_gpu_hours") > 0)
            .then(pl.col("allocated_gpu_hours") / pl.col("capacity_gpu_hours"))
            .alias("allocated_share"),
            pl.when(pl.col("utilization").is_finite()).then(pl.col("utilization")),
        )
        .sort(["cluster", "gpu_model"], nulls_last=True)
    )


def _columns(inputs: ReviewInputs, first: list[Column]) -> list[Column]:
    currency = inputs.settings.currency or "currency"
    cluster = [Column("cluster", "cluster")] if inputs.multi_cluster else []
    return (
        cluster
        + first
        + [
            Column("job_count", "jobs", fmt_int, True),
            Column("gpu_hours", "GPU-hours", fmt_hours, True),
            Column("cost", f"cost ({currency})", fmt_money, True),
            Column("utilization", "utilization (%)", fmt_pct, True),
            Column("idle_gpu_hours", "idle GPU-hours", fmt_hours, True),
            Column("idle_cost", f"idle cost ({currency})", fmt_money, True),
            Column("queue_seconds_p50", "queue p50 (min)", fmt_minutes, True),
            Column("queue_seconds_p95", "queue p95 (min)", fmt_minutes, True),
        ]
    )


def partitions_section(inputs: ReviewInputs) -> Section:
    columns = _columns(inputs, [Column("partition_name", "partition", wrap=True)])
    values = {"table": table(partition_frame(inputs), columns)}
    return Section("partitions", "Partitions", "sections/partitions.html", values)


def scheduler_frame(inputs: ReviewInputs) -> pl.DataFrame:
    """Per cluster and scheduler (Slurm, Kubernetes), then each cluster's sum (scheduler ``all``)."""
    jobs = inputs.jobs
    per_scheduler = jobs.group_by("cluster", "scheduler").agg(_job_measures())
    summed = jobs.group_by("cluster").agg(_job_measures()).with_columns(scheduler=pl.lit("all"))
    return (
        pl.concat([per_scheduler, summed.select(per_scheduler.columns)])
        .with_columns(
            pl.when(pl.col("utilization").is_finite()).then(pl.col("utilization")), _last=pl.col("scheduler") == "all"
        )
        .sort("cluster", "_last", "scheduler")
        .drop("_last")
    )


def schedulers_section(inputs: ReviewInputs) -> Section | None:
    """Slurm and Kubernetes side by side and summed; only for a month with more than one scheduler."""
    if "scheduler" not in inputs.jobs.columns or inputs.jobs["scheduler"].n_unique() < 2:
        return None
    columns = _columns(inputs, [Column("scheduler", "scheduler")])
    values = {"table": table(scheduler_frame(inputs), columns)}
    return Section("schedulers", "Schedulers", "sections/schedulers.html", values)


def models_section(inputs: ReviewInputs) -> Section:
    capacity = [
        Column("gpu_model", "GPU model", wrap=True),
        Column("capacity_gpu_hours", "capacity (GPU-hours)", fmt_hours, True),
        Column("allocated_share", "allocated (% of capacity)", fmt_pct, True),
    ]
    frame = model_frame(inputs)
    values = {
        "table": table(frame, _columns(inputs, capacity)),
        "unpriced": unpriced_models(frame["gpu_model"].to_list(), inputs.settings.segments),
    }
    return Section("gpu-models", "GPU models", "sections/gpu_models.html", values)
