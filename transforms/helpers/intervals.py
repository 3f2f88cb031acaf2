"""Time intervals as frames: merging the overlapping ones of a key, clipping to a period."""

from __future__ import annotations

from datetime import datetime

import polars as pl


def merge_intervals(frame: pl.DataFrame, keys: list[str], start: str = "start_ts", end: str = "end_ts") -> pl.DataFrame:
    """One row per run of overlapping or touching ``[start, end)`` intervals of each key (the
    other columns of the first interval of the run)."""
    if frame.is_empty():
        return frame
    ordered = frame.sort(*keys, start)
    reach = pl.col(end).cum_max().shift().over(keys)
    opened = (pl.col(start) > reach).fill_null(True).cast(pl.Int64).cum_sum().over(keys)
    others = [name for name in frame.columns if name not in (*keys, start, end)]
    merged = (
        ordered.with_columns(_run=opened)
        .group_by(*keys, "_run", maintain_order=True)
        .agg(pl.col(start).min(), pl.col(end).max(), *[pl.col(name).first() for name in others])
    )
    return merged.select(frame.columns)


def clip_intervals(
    frame: pl.DataFrame, period_start: datetime, period_end: datetime, start: str = "start_ts", end: str = "end_ts"
) -> pl.DataFrame:
    """The intervals cut to ``[period_start, period_end)``; those left empty are dropped."""
    return frame.with_columns(
        pl.col(start).clip(period_start, period_end), pl.col(end).clip(period_start, period_end)
    ).filter(pl.col(end) > pl.col(start))
