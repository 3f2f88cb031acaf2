"""The review's frames priced at the dated list prices (``reports.costs``), once, in ``build_inputs``.

- jobs: ``cost`` and ``idle_cost`` of each run over its held interval;
- models (per month, cluster, GPU model, for 12 months): hours from the job runs and the
  hourly capacity rows, ``workload_idle_cost`` from the runs, ``infra_idle_cost`` from each
  hour's capacity not held, at that hour's price;
(fct_job_flags and mart_user_monthly price their ``idle_cost`` the same way:
``transforms.marts.flag_rules.costs``.)
"""

from __future__ import annotations

import polars as pl

from reports.costs import with_hour_cost, with_job_costs

MODEL_KEY = ["month", "cluster", "gpu_model"]


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
    jobs = (
        with_job_costs(runs, segments, pl.col("month"))
        .group_by(MODEL_KEY)
        .agg(
            pl.col("gpu_hours").sum(),
            pl.col("idle_gpu_hours").sum(),
            priced_sum("idle_cost").alias("workload_idle_cost"),
        )
    )
    return capacity.join(jobs, on=MODEL_KEY, how="full", coalesce=True, nulls_equal=True).sort(MODEL_KEY)
