"""marts.mart_user_monthly: per cluster x user x department, the month's GPU use and waste.

From the month's ``fct_job_usage`` (every run that held GPUs in the month) and
``fct_job_flags``. ``utilization`` is active / measured GPU-hours (runs with samples);
``wasted_gpu_hours`` counts each flagged run once, at the largest waste over its reasons.
``is_zero_util_over_threshold``: zero-util GPU-hours above ``flags.zero_util_user_gpu_hours``
(the per-user part of ZERO_UTIL); ``is_low_efficiency``: at least
``flags.low_efficiency_gpu_hours`` at a utilization of at most
``flags.low_efficiency_utilization`` (the users' low-efficiency table).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

import polars as pl

from transforms.helpers.run_order import in_run_order
from transforms.marts.flag_rules import Thresholds
from transforms.marts.flag_rules.costs import with_idle_cost

KEY = ["cluster", "user_name", "department", "division"]

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "user_name": pl.String(),
    "department": pl.String(),
    "division": pl.String(),
    "job_count": pl.Int64(),
    "gpu_hours": pl.Float64(),
    "active_gpu_hours": pl.Float64(),
    "idle_gpu_hours": pl.Float64(),
    "zero_util_gpu_hours": pl.Float64(),
    "utilization": pl.Float64(),
    "idle_cost": pl.Float64(),
    "currency": pl.String(),
    "flagged_job_count": pl.Int64(),
    "wasted_gpu_hours": pl.Float64(),
    "is_zero_util_over_threshold": pl.Boolean(),
    "is_low_efficiency": pl.Boolean(),
    "month": pl.Date(),
}


def _per_user_usage(usage: pl.DataFrame) -> pl.DataFrame:
    measured = pl.col("utilization").is_not_null()
    return (
        usage.filter(pl.col("gpu_hours") > 0)
        .group_by(KEY, maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("job_count"),
            pl.col("gpu_hours").sum(),
            pl.col("active_gpu_hours").fill_null(0.0).sum(),
            pl.col("idle_gpu_hours").fill_null(0.0).sum(),
            pl.col("zero_util_gpu_hours").fill_null(0.0).sum(),
            pl.col("gpu_hours").filter(measured).sum().alias("_measured_gpu_hours"),
            # unpriced runs (null cost) are skipped; null when no run is priced
            pl.when(pl.col("idle_cost").is_not_null().any()).then(pl.col("idle_cost").sum()).alias("idle_cost"),
        )
    )


def _per_user_flags(flags: pl.DataFrame) -> pl.DataFrame:
    per_run = flags.group_by([*KEY, "job_id_raw", "start_time"], maintain_order=True).agg(
        pl.col("wasted_gpu_hours").max()
    )
    return per_run.group_by(KEY, maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("flagged_job_count"), pl.col("wasted_gpu_hours").sum()
    )


def mart_user_monthly(
    usage: pl.DataFrame,
    flags: pl.DataFrame,
    thresholds: Thresholds,
    prices: pl.DataFrame | Mapping[str, float],
    currency: str,
    month: date,
) -> pl.DataFrame:
    """SCHEMA rows, one per cluster x user x department with GPU-hours in ``month``, ordered by key.

    ``usage``: fct_job_usage rows of the month; ``flags``: fct_job_flags rows of the month.
    """
    users = _per_user_usage(with_idle_cost(in_run_order(usage), prices, currency, month))
    measured = pl.col("_measured_gpu_hours")
    frame = (
        users.join(_per_user_flags(in_run_order(flags)), on=KEY, how="left", nulls_equal=True)
        .with_columns(
            pl.col("flagged_job_count").fill_null(0),
            pl.col("wasted_gpu_hours").fill_null(0.0),
            utilization=pl.when(measured > 0).then(pl.col("active_gpu_hours") / measured),
            currency=pl.lit(currency),
            month=pl.lit(month),
        )
        .with_columns(
            is_zero_util_over_threshold=pl.col("zero_util_gpu_hours") > thresholds.zero_util_user_gpu_hours,
            is_low_efficiency=(pl.col("gpu_hours") >= thresholds.low_efficiency_gpu_hours)
            & (pl.col("utilization") <= thresholds.low_efficiency_utilization).fill_null(False),
        )
    )
    return frame.select(list(SCHEMA)).cast(SCHEMA).sort(KEY, nulls_last=False)
