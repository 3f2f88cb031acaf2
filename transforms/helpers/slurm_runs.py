"""Parsed sacct rows made into job runs: the window filter, the latest row per run, pending rows
superseded by a start, and the steps counted per run."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from transforms.helpers.slurm_policy import TERMINAL_STATES

RUN_KEY = ("cluster", "job_id_raw", "submit_time", "start_time")


def in_window(window_start: datetime, window_end: datetime) -> pl.Expr:
    """Runs overlapping [window_start, window_end), zero-length runs starting in it, and
    runs not started (null start_time) that were submitted in it."""
    start, end, submit = pl.col("start_time"), pl.col("end_time"), pl.col("submit_time")
    started = (
        start.is_not_null() & (start < window_end) & (end.is_null() | (end > window_start) | (start >= window_start))
    )
    waiting = start.is_null() & (submit >= window_start) & (submit < window_end)
    return started | waiting


def latest_per_key(frame: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """One row per ``key``: one with an End if any has (its final times: a day read before the
    run ended holds no End, whichever day it is), else the one from the latest ``day``."""
    ended = pl.col("end_time").is_not_null()
    return frame.sort(ended, "day", maintain_order=True).unique(subset=key, keep="last", maintain_order=True)


def drop_superseded_pending(runs: pl.DataFrame) -> pl.DataFrame:
    """Drop not-started rows when a later day shows the same submission started."""
    key = ["cluster", "job_id_raw", "submit_time"]
    started = runs.filter(pl.col("start_time").is_not_null()).group_by(key).agg(_started_day=pl.col("day").max())
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
    started = runs.filter(pl.col("start_time").is_not_null()).select("_run", "cluster", "job_id_raw", "start_time")
    placed = (
        steps.filter(pl.col("start_time").is_not_null())
        .select("cluster", pl.col("_parent_raw").alias("job_id_raw"), "start_time")
        .sort("start_time")
        .join_asof(started.sort("start_time"), on="start_time", by=["cluster", "job_id_raw"], check_sortedness=False)
    )
    counts = placed.drop_nulls("_run").group_by("_run").agg(n_steps=pl.len().cast(pl.Int32))
    return (
        runs.join(counts, on="_run", how="left", maintain_order="left")
        .with_columns(pl.col("n_steps").fill_null(0))
        .drop("_run")
    )


LAST_SAMPLES_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "job_id_raw": pl.String(),  # the hpc_job label
    "start_time": pl.Datetime("us"),  # the run it was looked up for
    "last_sample_end": pl.Datetime("us"),  # the last labelled sample at or after the start + one step
}


def runaway(frame_state: str = "state") -> pl.Expr:
    """A run in a terminal state whose End is unknown: slurmdbd lost its end (a runaway job)."""
    return (
        pl.col(frame_state).is_in(TERMINAL_STATES) & pl.col("start_time").is_not_null() & pl.col("end_time").is_null()
    )


def with_runaway_ends(runs: pl.DataFrame, last_samples: pl.DataFrame | None) -> pl.DataFrame:
    """Runaway runs ended at the earliest of start + time limit, their last labelled DCGM sample
    (``last_samples``) and the end of the month they started in; ``end_inferred_from`` names which
    (``time_limit``, ``last_sample``, ``month_end``), null for every other run."""
    samples = last_samples if last_samples is not None else pl.DataFrame(schema=LAST_SAMPLES_SCHEMA)
    joined = runs.join(
        samples.select(list(LAST_SAMPLES_SCHEMA)),
        on=["cluster", "job_id_raw", "start_time"],
        how="left",
        nulls_equal=True,
        maintain_order="left",
    )
    start = pl.col("start_time")
    by_limit = start + pl.duration(seconds=pl.col("timelimit_seconds"))
    by_month = start.dt.truncate("1mo").dt.offset_by("1mo")  # 00:00 on the next month's first day
    inferred = pl.min_horizontal(by_limit, pl.col("last_sample_end"), by_month)
    source = (
        pl.when(inferred == by_limit)
        .then(pl.lit("time_limit"))
        .when(inferred == pl.col("last_sample_end"))
        .then(pl.lit("last_sample"))
        .otherwise(pl.lit("month_end"))
    )  # fmt: skip  (one rule a line)
    is_runaway = runaway()
    return joined.with_columns(
        end_inferred_from=pl.when(is_runaway).then(source),
        end_time=pl.when(is_runaway).then(pl.max_horizontal(inferred, start)).otherwise(pl.col("end_time")),
    ).drop("last_sample_end")
