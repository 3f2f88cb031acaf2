"""A month's landings read straight from the lake's files, for callers that must not wait.

``month_landings`` (warehouse/landings.py) reads ``meta.landings`` on a warehouse connection;
the monthly review sensor (pipelines/review_sensor.py) runs while the monthly job may hold the
DuckDB file and its lock for a long time, so it reads the landing files themselves: no DuckDB
file, no lock. Only the files of the month's days are listed (``day=YYYY-MM-*``), so a scan
costs one small file per cluster, source and day of that month, however long the lake's history.
A landing is replaced by a rename (warehouse/lake.py), so a scan sees each day's old landing or
its new one, never half of one.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import polars as pl

from warehouse.lake import FILE
from warehouse.landings import LANDING_SCHEMA, LANDINGS


def month_pattern(month: date) -> str:
    """The glob, relative to the lake, of the landing files of ``month``'s days."""
    values = {"day": f"{month:%Y-%m}-*"}
    return "/".join([LANDINGS.schema, LANDINGS.table, *(f"{k}={values.get(k, '*')}" for k in LANDINGS.keys), FILE])


def scan_month_landings(lake: Path, month: date) -> pl.DataFrame:
    """Every landing of ``month``'s days (``LANDING_SCHEMA``, sorted by cluster, source, day),
    read from the lake's Parquet files; empty when none landed."""
    files = sorted(Path(lake).glob(month_pattern(month)))
    if not files:
        return pl.DataFrame(schema=LANDING_SCHEMA)
    keys = {key: LANDING_SCHEMA[key] for key in LANDINGS.keys}
    frame = pl.read_parquet(files, hive_partitioning=True, hive_schema=keys, missing_columns="insert")
    return frame.select(pl.col(name).cast(kind) for name, kind in LANDING_SCHEMA.items()).sort(
        "cluster", "source", "day"
    )
