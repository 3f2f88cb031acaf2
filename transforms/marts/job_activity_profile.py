"""int_job_activity_profiled: per job run, the time shape of its activity over the month.

From ``int_gpu_minutes_attributed`` rows (per GPU x hour x run; attributed methods only),
summed over the run's GPUs per clock hour:

- ``measured_hours``: hour buckets with samples.
- ``steady_share``: the share of the run's GR_ENGINE_ACTIVE samples in hours whose mean
  GR_ENGINE_ACTIVE lies in ``[band_low, band_high)`` (the INPUT_BOUND band); null without
  GR_ENGINE_ACTIVE samples. A job whose hours sit in the band is steadily low; one with
  busy phases and idle phases is not.
- ``tail_zero_hours``: for runs that ended inside the period, how long before their end
  the run sat at zero activity: the trailing consecutive hour buckets in which every sample
  of every GPU was zero (``zero_samples`` = ``samples``), end - max(first such bucket,
  start), plus the zero share of the hour just before them times its span in the run (a
  zero stretch that starts mid-hour: exact when the work stopped and never resumed, as in
  a tail; zero minutes scattered over that hour count too). 0 when the last hour was not
  all zero or had no samples (a gap ends the tail); null for runs still open at the
  period end.

Not materialized: ``fct_job_flags`` computes it from the month's attribution rows.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from transforms.intermediate.int_gpu_minutes_attributed import ATTRIBUTED_METHODS

RUN = ["cluster", "job_id_raw", "start_time"]

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "job_id_raw": pl.String(),
    "start_time": pl.Datetime("us"),
    "measured_hours": pl.Int64(),
    "steady_share": pl.Float64(),
    "tail_zero_hours": pl.Float64(),
}


def _hourly(attributed: pl.DataFrame) -> pl.DataFrame:
    """Per run and hour: samples, zero samples, and the GR_ENGINE_ACTIVE sum/count."""
    return (
        attributed.filter(pl.col("attribution_method").is_in(ATTRIBUTED_METHODS) & pl.col("job_id_raw").is_not_null())
        .group_by([*RUN, "hour"])
        .agg(pl.col("samples", "zero_samples", "gr_engine_active_sum", "gr_engine_active_n").sum())
        .filter(pl.col("samples") > 0)
    )


def _steadiness(hourly: pl.DataFrame, band_low: float, band_high: float) -> pl.DataFrame:
    mean = pl.col("gr_engine_active_sum") / pl.col("gr_engine_active_n")
    in_band = (pl.col("gr_engine_active_n") > 0) & (mean >= band_low) & (mean < band_high)
    total = pl.col("gr_engine_active_n").sum()
    return hourly.group_by(RUN).agg(
        pl.len().cast(pl.Int64).alias("measured_hours"),
        pl.when(total > 0).then(pl.col("gr_engine_active_n").filter(in_band).sum() / total).alias("steady_share"),
    )


def _hours(column: pl.Expr) -> pl.Expr:
    return column.dt.total_seconds() / 3600.0


def _tails(hourly: pl.DataFrame, runs: pl.DataFrame, period_end: datetime) -> pl.DataFrame:
    """tail_zero_hours per ended run (0.0 when none): its trailing all-zero hours, plus the
    zero share of the hour just before them."""
    ended = runs.filter(pl.col("end_time").is_not_null() & (pl.col("end_time") <= period_end)).select(
        *RUN, "end_time", last_hour=(pl.col("end_time") - pl.duration(microseconds=1)).dt.truncate("1h")
    )
    ranked = (
        hourly.join(ended, on=RUN)
        .with_columns(
            _back=(pl.col("last_hour") - pl.col("hour")).dt.total_hours(),
            _zero_share=pl.min_horizontal(pl.col("zero_samples") / pl.col("samples"), pl.lit(1.0)),
        )
        .sort([*RUN, "_back"])
        .with_columns(_rank=pl.col("_back").rank("ordinal").over(RUN) - 1)
        # consecutive from the last hour: the k-th bucket back must be hour last - k, all zero
        .with_columns(
            _streak=((pl.col("_back") == pl.col("_rank")) & (pl.col("_zero_share") >= 1 - 1e-9)).cum_min().over(RUN)
        )
        .with_columns(_n=pl.col("_streak").sum().over(RUN))
    )
    boundary = (pl.col("_back") == pl.col("_n")) & (pl.col("_rank") == pl.col("_n")) & (pl.col("_n") > 0)
    trailing = ranked.group_by(RUN).agg(
        pl.col("hour").filter(pl.col("_streak")).min().alias("_tail_start"),
        pl.col("hour").filter(boundary).first().alias("_boundary_hour"),
        pl.col("_zero_share").filter(boundary).first().alias("_boundary_share"),
        pl.col("end_time").first(),
    )
    tail_start = pl.when(pl.col("_tail_start").is_not_null()).then(
        pl.max_horizontal(pl.col("_tail_start"), pl.col("start_time"))
    )
    boundary_span = _hours(pl.col("_tail_start") - pl.max_horizontal(pl.col("_boundary_hour"), pl.col("start_time")))
    partial = (pl.col("_boundary_share") * boundary_span).fill_null(0.0)
    return (
        ended.select(RUN)
        .join(trailing, on=RUN, how="left")
        .select(
            *RUN,
            tail_zero_hours=(_hours(pl.col("end_time") - tail_start) + partial).fill_null(0.0),
        )
    )


def int_job_activity_profiled(
    attributed: pl.DataFrame,
    runs: pl.DataFrame,
    period_end: datetime,
    band_low: float,
    band_high: float,
) -> pl.DataFrame:
    """SCHEMA rows, one per run of ``runs`` (cluster, job_id_raw, start_time, end_time) that
    started; ``attributed``: int_gpu_minutes_attributed rows of the period (its SCHEMA)."""
    started = runs.filter(pl.col("start_time").is_not_null()).select(*RUN, "end_time").unique(RUN)
    hourly = _hourly(attributed)
    profile = (
        started.select(RUN)
        .join(_steadiness(hourly, band_low, band_high), on=RUN, how="left")
        .join(_tails(hourly, started, period_end), on=RUN, how="left")
        .with_columns(pl.col("measured_hours").fill_null(0))
    )
    return profile.select(list(SCHEMA)).cast(SCHEMA).sort(RUN)
