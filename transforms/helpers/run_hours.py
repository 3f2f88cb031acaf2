"""Runs cut into clock hours: one row per run x hour it overlaps, with the seconds inside."""

from __future__ import annotations

import polars as pl


def per_hour(runs: pl.DataFrame) -> pl.DataFrame:
    """``runs`` (with ``run_start`` < ``run_end``) exploded to one row per overlapped clock hour:
    adds ``hour`` (its start) and ``_seconds`` (the run's seconds inside that hour)."""
    hours = runs.with_columns(
        hour=pl.datetime_ranges(pl.col("run_start").dt.truncate("1h"), pl.col("run_end"), "1h", closed="left")
    ).explode("hour")
    overlap = pl.min_horizontal(pl.col("run_end"), pl.col("hour") + pl.duration(hours=1)) - pl.max_horizontal(
        pl.col("run_start"), pl.col("hour")
    )
    return hours.with_columns(_seconds=overlap.dt.total_microseconds() / 1e6)
