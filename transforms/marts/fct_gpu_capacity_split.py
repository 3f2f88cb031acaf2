"""marts.fct_gpu_capacity_split: each GPU-hour's capacity split into the states of
``contracts/capacity_states.py`` (allocated, planned down, down, reserved, idle), like
``sreport cluster utilization`` splits a cluster's time.

Per row of ``marts.fct_gpu_hourly`` (cluster, GPU or MIG instance, hour): its
``capacity_seconds`` (GPU-seconds, MIG instances by their fraction) in exactly one state each:

1. The downtime intervals of the hour (the union of every table in ``DOWNTIME_TABLES``; an
   interval with a null ``gpu`` covers every GPU of its host) are resolved second by second by
   ``PRECEDENCE``: where a maintenance reservation and a drain overlap, the time is
   ``planned_down``, and so on. Each state's wall seconds x the instance's fraction are its
   covered GPU-seconds; the rest of the hour is ``idle``.
2. ``allocated`` is the row's ``allocated_seconds`` (what jobs and pods held). Allocation wins
   over every other state, but fct_gpu_hourly does not say where in the hour it was held, so it
   is taken from the states in the reverse of ``PRECEDENCE``: the idle time first, then reserved
   (jobs in their reservation), then down (jobs finishing on a draining node), then planned
   down. This is exact when, within the GPU-hour, jobs ran only in up time, or only inside one
   interval; a job that ran partly inside a downtime interval while the GPU was also idle in
   that hour counts its overlap as taking idle time.

The states add up to capacity on every row (the blocking check ``capacity_states_balance``);
allocation beyond capacity (which ``allocation_within_capacity`` already refuses) leaves the sum
above it, so it fails too, never hidden.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from contracts.capacity_states import ALLOCATED, DOWNTIME_INTERVAL, IDLE, PRECEDENCE, STATES
from contracts.gpus import GPU_INSTANCE

STATE_COLUMNS: dict[str, str] = {state: f"{state}_seconds" for state in STATES}
SCHEMA: dict[str, pl.DataType] = {
    **GPU_INSTANCE,
    "gpu_model": pl.String(),
    "hour": pl.Datetime("us"),
    "capacity_seconds": pl.Float64(),
    **{column: pl.Float64() for column in STATE_COLUMNS.values()},
    "month": pl.Date(),
}
HOURLY_COLUMNS = (*GPU_INSTANCE, "gpu_model", "hour", "capacity_seconds", "allocated_seconds")
# Interval states by precedence (the first wins a second they share); allocation takes from the last first.
INTERVAL_ORDER: tuple[str, ...] = tuple(state for state in PRECEDENCE if state not in (ALLOCATED, IDLE))
_RANK = {state: rank for rank, state in enumerate(INTERVAL_ORDER)}
_HOUR = pl.duration(hours=1)


def interval_hours(intervals: pl.DataFrame, period_start: datetime, period_end: datetime) -> pl.DataFrame:
    """Downtime intervals cut at clock hours (and to the period): cluster, hostname, gpu, hour,
    rank (the state's place in ``INTERVAL_ORDER``), start, end."""
    known = intervals.filter(pl.col("state").is_in(list(INTERVAL_ORDER)))
    clipped = known.with_columns(
        start=pl.max_horizontal("start_ts", pl.lit(period_start)), end=pl.min_horizontal("end_ts", pl.lit(period_end))
    ).filter(pl.col("end") > pl.col("start"))
    hours = clipped.with_columns(
        hour=pl.datetime_ranges(pl.col("start").dt.truncate("1h"), pl.col("end"), "1h", closed="left")
    ).explode("hour")
    return hours.select(
        "cluster",
        "hostname",
        "gpu",
        "hour",
        rank=pl.col("state").replace_strict(_RANK, return_dtype=pl.Int32()),
        start=pl.max_horizontal("start", "hour"),
        end=pl.min_horizontal("end", pl.col("hour") + _HOUR),
    )


def covered_seconds(hourly: pl.DataFrame, pieces: pl.DataFrame) -> pl.DataFrame:
    """Per row of ``hourly`` (by ``_row``) with any interval: the wall seconds of the hour in each
    interval state, each second in the state of highest precedence among those covering it."""
    joined = hourly.select("_row", "cluster", "hostname", "gpu", "hour").join(
        pieces.rename({"gpu": "_gpu"}), on=["cluster", "hostname", "hour"]
    )
    joined = joined.filter(pl.col("_gpu").is_null() | (pl.col("_gpu") == pl.col("gpu"))).select(
        "_row", "rank", "start", "end"
    )
    points = pl.concat([joined.select("_row", p=pl.col("start")), joined.select("_row", p=pl.col("end"))]).unique()
    segments = points.sort("_row", "p").with_columns(q=pl.col("p").shift(-1).over("_row")).drop_nulls("q")
    resolved = (
        segments.join(joined, on="_row")
        .filter((pl.col("start") <= pl.col("p")) & (pl.col("end") >= pl.col("q")))
        .group_by("_row", "p", "q")
        .agg(pl.col("rank").min())
        .with_columns(seconds=(pl.col("q") - pl.col("p")).dt.total_microseconds() / 1e6)
    )
    wide = resolved.group_by("_row", "rank").agg(pl.col("seconds").sum())
    return wide.pivot(on="rank", index="_row", values="seconds", sort_columns=True)


def fct_gpu_capacity_split(
    hourly: pl.DataFrame, intervals: pl.DataFrame, period_start: datetime, period_end: datetime
) -> pl.DataFrame:
    """Rows in ``SCHEMA``, one per row of ``hourly`` (fct_gpu_hourly's ``HOURLY_COLUMNS``);
    ``intervals``: ``DOWNTIME_INTERVAL`` rows (any days; cut to the period here)."""
    rows = hourly.select(HOURLY_COLUMNS).with_row_index("_row")
    pieces = interval_hours(intervals.select(list(DOWNTIME_INTERVAL)), period_start, period_end)
    covered = covered_seconds(rows, pieces)
    rank_columns = [str(rank) for rank in range(len(INTERVAL_ORDER))]
    covered = covered.with_columns([pl.lit(0.0).alias(c) for c in rank_columns if c not in covered.columns])
    frame = rows.join(covered, on="_row", how="left").with_columns(pl.col(rank_columns).fill_null(0.0))
    fraction = pl.col("capacity_seconds") / 3600.0
    frame = frame.with_columns([(pl.col(str(_RANK[s])) * fraction).alias(STATE_COLUMNS[s]) for s in INTERVAL_ORDER])
    frame = frame.with_columns(
        (pl.col("capacity_seconds") - pl.sum_horizontal([STATE_COLUMNS[s] for s in INTERVAL_ORDER])).alias(
            STATE_COLUMNS[IDLE]
        )
    )
    frame = _allocate(frame).with_columns(month=pl.lit(period_start.date()))
    return frame.select(list(SCHEMA)).cast(SCHEMA).sort("cluster", "hostname", "gpu", "gpu_i_id", "hour")


def _allocate(frame: pl.DataFrame) -> pl.DataFrame:
    """Allocated seconds taken from the other states, last in ``PRECEDENCE`` first."""
    left = pl.col("allocated_seconds").fill_null(0.0).clip(lower_bound=0.0)
    frame = frame.with_columns(_left=left, **{STATE_COLUMNS[ALLOCATED]: left})
    for state in reversed(PRECEDENCE):
        if state == ALLOCATED:
            continue
        column = STATE_COLUMNS[state]
        taken = pl.min_horizontal("_left", pl.col(column).clip(lower_bound=0.0))
        frame = frame.with_columns(_taken=taken).with_columns(
            (pl.col(column) - pl.col("_taken")).alias(column), _left=pl.col("_left") - pl.col("_taken")
        )
    return frame.drop("_left", "_taken")
