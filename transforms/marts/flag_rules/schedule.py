"""Rules on a job's time: IDLE_TAIL (idle hours before it ended) and DEBUG_OVER_LIMIT (debug
partition: too long, or too many of a user's debug jobs at once)."""

from __future__ import annotations

import polars as pl

from transforms.marts.flag_rules import Rule, Thresholds, emit, num
from transforms.marts.flag_rules.activity import is_busy_engine_idle_sms, is_zero_util


def idle_tail(jobs: pl.DataFrame, t: Thresholds) -> pl.DataFrame:
    """The run worked, then ended after at least ``idle_tail_hours`` at zero activity
    (``tail_zero_hours`` from int_job_activity_profiled, shorter than the run): medium.
    Runs idle throughout are left to ZERO_UTIL, and BUSY_ENGINE_IDLE_SMS runs are skipped
    (their "zero" hours are idle SMs under a busy engine). Wasted: tail hours x GPUs."""
    tail = pl.col("tail_zero_hours").fill_null(0.0)
    worked_first = tail < pl.col("run_seconds") / 3600.0 - 1e-9
    rule = (
        (tail >= t.idle_tail_hours)
        & (tail > 0)
        & worked_first
        & ~is_zero_util(t).fill_null(False)
        & ~is_busy_engine_idle_sms(t).fill_null(False)
    )
    wasted = tail * pl.col("gpus")
    detail = pl.format(
        "the last {} h before the job ended were at zero activity on all its GPUs ({} GPU-hours)",
        num(tail, 1),
        num(wasted, 2),
    )
    return emit(jobs.filter(rule), "IDLE_TAIL", detail, wasted)


def _over_concurrency(debug: pl.DataFrame, limit: int) -> pl.DataFrame:
    """Per debug run (``_run``): the most of its user's debug runs running at once while it
    ran, for runs where that exceeds ``limit``."""
    spans = debug.select("_run", "cluster", "user_name", "start_time", "run_end")
    at_start = (
        spans.join(spans, on=["cluster", "user_name"], suffix="_other")
        .filter((pl.col("start_time_other") <= pl.col("start_time")) & (pl.col("start_time") < pl.col("run_end_other")))
        .group_by("_run", "cluster", "user_name", "start_time")
        .agg(pl.len().alias("running"))
    )
    peaks = (
        spans.join(at_start.rename({"_run": "_instant", "start_time": "instant"}), on=["cluster", "user_name"])
        .filter((pl.col("start_time") <= pl.col("instant")) & (pl.col("instant") < pl.col("run_end")))
        .group_by("_run")
        .agg(pl.col("running").max().alias("concurrent_debug_jobs"))
    )
    return peaks.filter(pl.col("concurrent_debug_jobs") > limit)


def debug_over_limit(jobs: pl.DataFrame, t: Thresholds) -> pl.DataFrame:
    """Runs in ``debug_partition`` longer than ``debug_max_hours``, or running while their user
    had more than ``debug_max_concurrent_jobs`` debug runs at once: medium.
    Wasted: GPU-hours past the time limit (0 for the concurrency part)."""
    debug = jobs.filter(
        (pl.col("partition_name") == t.debug_partition)
        & pl.col("start_time").is_not_null()
        & (pl.col("run_seconds") > 0)
    )
    concurrency = _over_concurrency(debug, t.debug_max_concurrent_jobs)
    limit_s = t.debug_max_hours * 3600.0
    frame = (
        debug.join(concurrency, on="_run", how="left")
        .with_columns(
            _long=pl.col("run_seconds") > limit_s,
            _many=pl.col("concurrent_debug_jobs").is_not_null(),
        )
        .filter(pl.col("_long") | pl.col("_many"))
    )
    long_text = pl.when(pl.col("_long")).then(
        pl.format(
            "ran {} h in partition {} (limit {} h)",
            num(pl.col("run_seconds") / 3600.0, 1),
            pl.col("partition_name"),
            pl.lit(t.debug_max_hours),
        )
    )
    many_text = pl.when(pl.col("_many")).then(
        pl.format(
            "user {} had {} debug jobs running at once (limit {})",
            pl.col("user_name"),
            pl.col("concurrent_debug_jobs"),
            pl.lit(t.debug_max_concurrent_jobs),
        )
    )
    detail = pl.concat_str([long_text, many_text], separator="; ", ignore_nulls=True)
    over_hours = (
        pl.when(pl.col("_long"))
        .then(pl.min_horizontal((pl.col("run_seconds") - limit_s) / 3600.0 * pl.col("gpus"), pl.col("gpu_hours")))
        .otherwise(0.0)
    )
    return emit(frame, "DEBUG_OVER_LIMIT", detail, over_hours)


RULES: tuple[Rule, ...] = (idle_tail, debug_over_limit)
