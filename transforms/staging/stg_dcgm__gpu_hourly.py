"""staging.stg_dcgm__gpu_hourly: DCGM samples rolled up per GPU (or MIG instance), job and hour.

Signals are kept as sums and non-null counts (plus maxima), not means, so any set of
hours aggregates exactly: mean = sum(<signal>_sum) / sum(<signal>_n). ``gpu_util`` is
converted from % to a 0-1 ratio before aggregating.

``coverage`` is n_samples / expected_samples, at most 1 (null when the step is longer than
an hour): a scrape gap lowers it; nothing is interpolated. Several ``hpc_job`` rows of one
instance and hour each count their own samples.

Energy: ``energy_mj`` is a counter since boot. Each sample's increment is its value minus
the previous non-null value of the same instance (cluster, hostname, gpu, gpu_i_id) in
time order over the WHOLE input frame; a drop is a counter reset and contributes the
post-reset value. The increment is attributed to the later sample, so the step between
the last sample of one hour and the first of the next lands in the later hour, and when
an instance's ``hpc_job`` label changes the step across the change goes to the new job.
The first sample of the input frame has no predecessor and contributes nothing: run
over a whole day and the step across midnight (one sample interval) is lost.
"""

from __future__ import annotations

import polars as pl

from contracts.signals import BEST_SIGNAL_ORDER

SIGNALS = ("gpu_util", "gr_engine_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active")
ZERO_ACTIVITY = 0.01  # default: a sample whose best signal is at most this counts as zero activity

GROUP_KEY = ("cluster", "hostname", "gpu", "uuid", "model_name", "gpu_i_id", "gpu_i_profile", "hpc_job")
INSTANCE_KEY = ("cluster", "hostname", "gpu", "gpu_i_id")

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "uuid": pl.String(),
    "model_name": pl.String(),
    "gpu_i_id": pl.Int16(),
    "gpu_i_profile": pl.String(),
    "hpc_job": pl.String(),
    "hour": pl.Datetime("us"),
    "n_samples": pl.Int64(),
    "expected_samples": pl.Int64(),
    "coverage": pl.Float64(),
    "first_ts": pl.Datetime("us"),
    "last_ts": pl.Datetime("us"),
    **{
        f"{signal}_{stat}": (pl.Int64() if stat == "n" else pl.Float64())
        for signal in SIGNALS
        for stat in ("sum", "n", "max")
    },
    "fb_used_mib_max": pl.Float64(),
    "fb_used_mib_sum": pl.Float64(),
    "fb_used_mib_n": pl.Int64(),
    "power_w_sum": pl.Float64(),
    "power_w_n": pl.Int64(),
    "energy_delta_mj": pl.Float64(),
    "zero_samples": pl.Int64(),
}


def best_signal() -> pl.Expr:
    """Per sample: the first activity signal of ``BEST_SIGNAL_ORDER`` present (sm_active, else
    gr_engine_active, else gpu_util, already a 0-1 ratio here)."""
    return pl.coalesce([pl.col(name) for name in BEST_SIGNAL_ORDER])


def capped_coverage() -> pl.Expr:
    """n_samples / expected_samples, at most 1; null when nothing is expected."""
    expected = pl.col("expected_samples")
    return pl.when(expected > 0).then(pl.min_horizontal(pl.col("n_samples") / expected, pl.lit(1.0)))


def energy_increment() -> pl.Expr:
    """The counter increase since the instance's previous non-null reading (see module doc)."""
    energy = pl.col("energy_mj")
    previous = energy.forward_fill().shift(1).over(list(INSTANCE_KEY), order_by="ts")
    return (
        pl.when(energy.is_null() | previous.is_null())
        .then(None)
        .when(energy >= previous)
        .then(energy - previous)
        .otherwise(energy)
    )


def _signal_aggs(signal: str) -> list[pl.Expr]:
    column = pl.col(signal)
    return [
        column.sum().alias(f"{signal}_sum"),
        column.count().alias(f"{signal}_n"),
        column.max().alias(f"{signal}_max"),
    ]


def _sum_or_null(column: str) -> pl.Expr:
    """Sum of the group's non-null values; null (not 0) when all are null."""
    return pl.when(pl.col(column).count() > 0).then(pl.col(column).sum())


def stg_dcgm__gpu_hourly(
    samples: pl.LazyFrame, step_seconds: int, zero_threshold: float = ZERO_ACTIVITY
) -> pl.LazyFrame:
    """Hourly rollup of RAW_SAMPLE_SCHEMA samples (``step_seconds``: the scrape interval).

    ``zero_samples`` counts samples whose best signal is at most ``zero_threshold``
    (config ``flags.zero_util_threshold``).
    """
    prepared = samples.with_columns(
        (pl.col("gpu_util") / 100.0).alias("gpu_util"),
        energy_increment().alias("_energy_delta"),
        pl.col("ts").dt.truncate("1h").alias("hour"),
    ).with_columns((best_signal() <= zero_threshold).alias("_zero"))
    hourly = prepared.group_by([*GROUP_KEY, "hour"]).agg(
        pl.len().alias("n_samples"),
        pl.col("ts").min().alias("first_ts"),
        pl.col("ts").max().alias("last_ts"),
        *(agg for signal in SIGNALS for agg in _signal_aggs(signal)),
        pl.col("fb_used_mib").max().alias("fb_used_mib_max"),
        pl.col("fb_used_mib").sum().alias("fb_used_mib_sum"),
        pl.col("fb_used_mib").count().alias("fb_used_mib_n"),
        pl.col("power_w").sum().alias("power_w_sum"),
        pl.col("power_w").count().alias("power_w_n"),
        _sum_or_null("_energy_delta").alias("energy_delta_mj"),
        pl.col("_zero").sum().alias("zero_samples"),
    )
    return (
        hourly.with_columns(pl.lit(3600 // step_seconds, pl.Int64).alias("expected_samples"))
        .with_columns(capped_coverage().alias("coverage"))
        .select(list(SCHEMA))
        .cast(SCHEMA)
        .sort(["cluster", "hostname", "gpu", "gpu_i_id", "hour", "hpc_job"])
    )
