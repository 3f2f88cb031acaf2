"""When GPUs are used: hour of day and day of week (UTC), for the day/night time-sharing review."""

from __future__ import annotations

import polars as pl

from reports.data import ReviewInputs
from reports.html import Column, Section, figure_html, fmt_float, fmt_pct, table
from reports.time_figures import hour_of_day_figure, weekday_hour_figure

DAY_START, DAY_END = 8, 20  # "day" is 08:00-20:00 UTC on Monday to Friday


def _shares(frame: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    capacity = pl.col("capacity_seconds").sum()
    return (
        frame.group_by(by)
        .agg(
            (pl.col("allocated_seconds").sum() / capacity).alias("allocated_share"),
            (pl.col("active_seconds").sum() / capacity).alias("active_share"),
            (pl.col("active_seconds").sum() / pl.col("allocated_seconds").sum()).alias("active_of_allocated"),
            (capacity / 3600).alias("capacity_gpu_hours"),
        )
        .with_columns(
            pl.when(pl.col(c).is_finite()).then(pl.col(c)).alias(c)
            for c in ("allocated_share", "active_share", "active_of_allocated")
        )
        .sort(by)
    )


def _with_time_parts(hourly: pl.DataFrame) -> pl.DataFrame:
    return hourly.with_columns(
        pl.col("hour").dt.hour().cast(pl.Int32).alias("hour_of_day"),
        pl.col("hour").dt.weekday().cast(pl.Int32).alias("weekday"),
    )


def hour_of_day_frame(hourly: pl.DataFrame) -> pl.DataFrame:
    return _shares(_with_time_parts(hourly), ["hour_of_day"])


def weekday_hour_frame(hourly: pl.DataFrame) -> pl.DataFrame:
    return _shares(_with_time_parts(hourly), ["weekday", "hour_of_day"])


def day_night_frame(hourly: pl.DataFrame) -> pl.DataFrame:
    """Allocated and active shares in weekday daytime, weekday night and at the weekend."""
    parts = _with_time_parts(hourly).with_columns(
        pl.when(pl.col("weekday") >= 6)
        .then(pl.lit("3 weekend"))
        .when(pl.col("hour_of_day").is_between(DAY_START, DAY_END, closed="left"))
        .then(pl.lit("1 weekday day"))
        .otherwise(pl.lit("2 weekday night"))
        .alias("period")
    )
    return _shares(parts, ["period"]).with_columns(pl.col("period").str.slice(2))


DAY_NIGHT_COLUMNS = [
    Column("period", "period"),
    Column("capacity_gpu_hours", "capacity (GPU-hours)", fmt_float, True),
    Column("allocated_share", "allocated (% of capacity)", fmt_pct, True),
    Column("active_share", "active (% of capacity)", fmt_pct, True),
    Column("active_of_allocated", "active (% of allocated)", fmt_pct, True),
]


def time_profile_section(inputs: ReviewInputs) -> Section:
    hourly = inputs.hourly.filter(pl.col("capacity_seconds") > 0)
    values: dict = {"day_start": f"{DAY_START:02d}:00", "day_end": f"{DAY_END:02d}:00", "hour_of_day": None}
    if not hourly.is_empty():
        values |= {
            "hour_of_day": figure_html(hour_of_day_figure(hour_of_day_frame(hourly)), "fig-hour-of-day"),
            "weekday_hour": figure_html(weekday_hour_figure(weekday_hour_frame(hourly)), "fig-weekday-hour"),
            "table": table(day_night_frame(hourly), DAY_NIGHT_COLUMNS),
        }
    return Section("time-profile", "Hour of day and day of week", "sections/time_profile.html", values)
