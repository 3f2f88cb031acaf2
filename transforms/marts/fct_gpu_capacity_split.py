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
   over every other state. fct_gpu_hourly does not say when in the hour it was held; the runs
   do (``capacity_placement.py``): the row's allocated seconds are shared over the hour's
   interval segments in proportion to the GPU-seconds the runs held on its host in each, and
   taken out of that segment's state; the rest takes idle time. Allocation the runs' times do
   not place (a pod seen only by its samples), or more than a state's time holds, takes the
   remaining idle time first, then reserved, down and planned-down time.

The states add up to capacity on every row (the blocking check ``capacity_states_balance``);
allocation beyond capacity (which ``allocation_within_capacity`` already refuses) leaves the sum
above it, so it fails too, never hidden.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from contracts.capacity_states import (
    ALLOCATED,
    DOWNTIME_INTERVAL,
    IDLE,
    INTERVAL_STATES,
    PRECEDENCE,
    STATES,
    state_column,
)
from contracts.gpus import GPU_INSTANCE
from transforms.marts.capacity_placement import allocation_in_states

STATE_COLUMNS: dict[str, str] = {state: state_column(state) for state in STATES}
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
INTERVAL_ORDER: tuple[str, ...] = tuple(state for state in PRECEDENCE if state in INTERVAL_STATES)
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


def resolved_segments(hourly: pl.DataFrame, pieces: pl.DataFrame) -> pl.DataFrame:
    """Per row of ``hourly`` (by ``_row``) with any interval: the segments of its hour between the
    intervals' bounds that an interval covers (``p``, ``q``), each in the state of highest
    precedence among those covering it (``rank``), with its wall ``seconds``."""
    joined = hourly.select("_row", "cluster", "hostname", "gpu", "hour").join(
        pieces.rename({"gpu": "_gpu"}), on=["cluster", "hostname", "hour"]
    )
    joined = joined.filter(pl.col("_gpu").is_null() | (pl.col("_gpu") == pl.col("gpu"))).select(
        "_row", "rank", "start", "end"
    )
    points = pl.concat([joined.select("_row", p=pl.col("start")), joined.select("_row", p=pl.col("end"))]).unique()
    segments = points.sort("_row", "p").with_columns(q=pl.col("p").shift(-1).over("_row")).drop_nulls("q")
    return (
        segments.join(joined, on="_row")
        .filter((pl.col("start") <= pl.col("p")) & (pl.col("end") >= pl.col("q")))
        .group_by("_row", "p", "q")
        .agg(pl.col("rank").min())
        .with_columns(seconds=(pl.col("q") - pl.col("p")).dt.total_microseconds() / 1e6)
    )


def _by_rank(long: pl.DataFrame, value: str, prefix: str) -> pl.DataFrame:
    """``_row`` and one column ``<prefix><rank>`` per interval state (0 where none)."""
    sums = long.group_by("_row", "rank").agg(pl.col(value).sum())
    wide = sums.pivot(on="rank", index="_row", values=value, sort_columns=True)
    wide = wide.rename({c: f"{prefix}{c}" for c in wide.columns if c != "_row"})
    names = [f"{prefix}{rank}" for rank in range(len(INTERVAL_ORDER))]
    return wide.with_columns([pl.lit(0.0).alias(n) for n in names if n not in wide.columns])


def fct_gpu_capacity_split(
    hourly: pl.DataFrame,
    intervals: pl.DataFrame,
    period_start: datetime,
    period_end: datetime,
    held: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Rows in ``SCHEMA``, one per row of ``hourly`` (fct_gpu_hourly's ``HOURLY_COLUMNS``);
    ``intervals``: ``DOWNTIME_INTERVAL`` rows (any days; cut to the period here); ``held``: the
    runs' held GPUs per host and time (``capacity_placement.HELD``; None: allocation takes the
    idle time first)."""
    rows = hourly.select(HOURLY_COLUMNS).with_row_index("_row")
    pieces = interval_hours(intervals.select(list(DOWNTIME_INTERVAL)), period_start, period_end)
    segments = resolved_segments(rows, pieces)
    ranks = range(len(INTERVAL_ORDER))
    frame = rows.join(_by_rank(segments, "seconds", "_cov"), on="_row", how="left")
    if held is not None:
        placed = allocation_in_states(rows, segments, held)
        frame = frame.join(_by_rank(placed, "_alloc", "_in"), on="_row", how="left")
    frame = frame.with_columns([pl.lit(0.0).alias(f"_in{r}") for r in ranks if f"_in{r}" not in frame.columns])
    frame = frame.with_columns(pl.col([f"_cov{r}" for r in ranks] + [f"_in{r}" for r in ranks]).fill_null(0.0))
    fraction = pl.col("capacity_seconds") / 3600.0
    allocated = pl.col("allocated_seconds").fill_null(0.0).clip(lower_bound=0.0)
    frame = frame.with_columns(
        allocated.alias(STATE_COLUMNS[ALLOCATED]),
        *[
            (pl.col(f"_cov{_RANK[s]}") * fraction - pl.col(f"_in{_RANK[s]}"))
            .clip(lower_bound=0.0)
            .alias(STATE_COLUMNS[s])
            for s in INTERVAL_ORDER
        ],
    )
    others = [STATE_COLUMNS[s] for s in INTERVAL_ORDER]
    frame = frame.with_columns(
        (pl.col("capacity_seconds") - pl.col(STATE_COLUMNS[ALLOCATED]) - pl.sum_horizontal(others)).alias(
            STATE_COLUMNS[IDLE]
        )
    )
    frame = _settle(frame).with_columns(month=pl.lit(period_start.date()))
    return frame.select(list(SCHEMA)).cast(SCHEMA).sort("cluster", "hostname", "gpu", "gpu_i_id", "hour")


def _settle(frame: pl.DataFrame) -> pl.DataFrame:
    """Where idle came out below 0 (allocation the runs' times did not place in a state's time),
    the shortfall is taken from the interval states, last in ``PRECEDENCE`` first."""
    idle = STATE_COLUMNS[IDLE]
    frame = frame.with_columns(_left=(-pl.col(idle)).clip(lower_bound=0.0)).with_columns(
        pl.col(idle).clip(lower_bound=0.0)
    )
    for state in reversed(INTERVAL_ORDER):
        column = STATE_COLUMNS[state]
        taken = pl.min_horizontal("_left", pl.col(column))
        frame = frame.with_columns(_taken=taken).with_columns(
            (pl.col(column) - pl.col("_taken")).alias(column), _left=pl.col("_left") - pl.col("_taken")
        )
    # what is left over: allocation beyond capacity; idle goes negative so the balance check names the row
    return frame.with_columns((pl.col(idle) - pl.col("_left")).alias(idle)).drop("_left", "_taken")
