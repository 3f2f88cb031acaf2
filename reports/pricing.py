"""The review's frames priced at the dated list prices (``reports.costs``), once, in ``build_inputs``.

- jobs: ``cost`` and ``idle_cost`` of each run over its held interval;
- models (per month, cluster, GPU model, for 12 months): hours from the job runs and the
  hourly capacity rows, ``workload_idle_cost`` from the runs, ``infra_idle_cost`` from each
  hour's capacity not held, at that hour's price;
- flags and users: their ``idle_cost`` from the priced runs (the marts price at the base
  price), so every cost on a page uses the same prices.
"""

from __future__ import annotations

import polars as pl

from reports.costs import with_hour_cost, with_job_costs

MODEL_KEY = ["month", "cluster", "gpu_model"]
RUN_KEY = ["cluster", "job_id", "start_time"]


def priced_sum(column: str) -> pl.Expr:
    """The sum of the priced rows; null when no row has a price (never 0 for unpriced)."""
    return pl.when(pl.col(column).is_not_null().any()).then(pl.col(column).sum()).alias(column)


def model_months(runs: pl.DataFrame, model_hours: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """Per month, cluster and GPU model: capacity and allocated GPU-hours with the infra idle
    cost (hour grain), the runs' GPU-hours and idle GPU-hours with the workload idle cost."""
    infra = (pl.col("capacity_seconds").fill_null(0) - pl.col("allocated_seconds").fill_null(0)) / 3600
    hours = with_hour_cost(model_hours.with_columns(infra.alias("_infra")), segments, "_infra", "infra_idle_cost")
    capacity = hours.group_by(MODEL_KEY).agg(
        (pl.col("capacity_seconds").sum() / 3600).alias("capacity_gpu_hours"),
        (pl.col("allocated_seconds").sum() / 3600).alias("allocated_gpu_hours"),
        priced_sum("infra_idle_cost"),
    )
    jobs = with_job_costs(runs, segments, pl.col("month")).group_by(MODEL_KEY).agg(
        pl.col("gpu_hours").sum(), pl.col("idle_gpu_hours").sum(),
        priced_sum("idle_cost").alias("workload_idle_cost"),
    )  # fmt: skip
    return capacity.join(jobs, on=MODEL_KEY, how="full", coalesce=True, nulls_equal=True).sort(MODEL_KEY)


def repriced_flags(flags: pl.DataFrame, jobs: pl.DataFrame) -> pl.DataFrame:
    """Flag rows with the idle cost of their run (null when the run or its price is missing)."""
    costs = jobs.select(*RUN_KEY, "idle_cost").unique(RUN_KEY, keep="first")
    joined = flags.drop("idle_cost").join(costs, on=RUN_KEY, how="left", nulls_equal=True, maintain_order="left")
    return joined.select(flags.columns)


def repriced_users(users: pl.DataFrame, jobs: pl.DataFrame) -> pl.DataFrame:
    """User rows with the idle cost of their runs (null when none of them has a price)."""
    key = ["cluster", "user_name", "department"]
    costs = jobs.group_by(key).agg(priced_sum("idle_cost"))
    joined = users.drop("idle_cost").join(costs, on=key, how="left", nulls_equal=True, maintain_order="left")
    return joined.select(users.columns)
