"""Parsed sacct rows made into job runs: the window filter, the latest row per run, pending rows
superseded by a start, and the steps counted per run."""

from __future__ import annotations

from datetime import datetime

import polars as pl

RUN_KEY = ("cluster", "job_id_raw", "submit_time", "start_time")


def in_window(window_start: datetime, window_end: datetime) -> pl.Expr:
    """Runs overlapping [window_start, window_end), zero-length runs starting in it, and
    runs not started (null start_time) that were submitted in it."""
    start, end, submit = pl.col("start_time"), pl.col("end_time"), pl.col("submit_time")
    started = (
        start.is_not_null()
        & (start < window_end)
        & (end.is_null() | (end > window_start) | (start >= window_start))
    )
    waiting = start.is_null() & (submit >= window_start) & (submit < window_end)
    return started | waiting


def latest_per_key(frame: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """One row per ``key``: the one from the latest ``day``."""
    return frame.sort("day", maintain_order=True).unique(subset=key, keep="last", maintain_order=True)


def drop_superseded_pending(runs: pl.DataFrame) -> pl.DataFrame:
    """Drop not-started rows when a later day shows the same submission started."""
    key = ["cluster", "job_id_raw", "submit_time"]
    started = runs.filter(pl.col("start_time").is_not_null()).group_by(key).agg(
        _started_day=pl.col("day").max()
    )
    joined = runs.join(started, on=key, how="left", nulls_equal=True, maintain_order="left")
    keep = (
        pl.col("start_time").is_not_null()
        | pl.col("_started_day").is_null()
        | (pl.col("_started_day") <= pl.col("day"))
    )
    return joined.filter(keep).drop("_started_day")


def with_step_counts(runs: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """``n_steps``: each step belongs to the latest run of its job started at or before it."""
    runs = runs.with_row_index("_run")
    started = runs.filter(pl.col("start_time").is_not_null()).select(
        "_run", "cluster", "job_id_raw", "start_time"
    )
    placed = (
        steps.filter(pl.col("start_time").is_not_null())
        .select("cluster", pl.col("_parent_raw").alias("job_id_raw"), "start_time")
        .sort("start_time")
        .join_asof(
            started.sort("start_time"), on="start_time", by=["cluster", "job_id_raw"], check_sortedness=False
        )
    )
    counts = placed.drop_nulls("_run").group_by("_run").agg(n_steps=pl.len().cast(pl.Int32))
    return (
        runs.join(counts, on="_run", how="left", maintain_order="left")
        .with_columns(pl.col("n_steps").fill_null(0))
        .drop("_run")
    )
