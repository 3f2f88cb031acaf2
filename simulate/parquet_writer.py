"""Write one simulated day of samples as `out_dir/metrics/day=YYYY-MM-DD/part-0.parquet`."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from contracts.schemas import RAW_SAMPLE_SCHEMA

ROW_GROUP_ROWS = 1 << 20
COMPRESSION = "zstd"
COMPRESSION_LEVEL = 1
# Labels repeat a few thousand distinct values and the gauges are rounded (ratios to 1e-5,
# power to mW, util and memory integral), so dictionary pages win for both. Timestamps step
# regularly (delta encoding); the energy counter is unique per row: byte-stream-split
# groups its float64 bytes so zstd finds the slowly changing high bytes.
COLUMN_ENCODING = {"ts": "DELTA_BINARY_PACKED", "energy_mj": "BYTE_STREAM_SPLIT"}
DICTIONARY_COLUMNS = [c for c in RAW_SAMPLE_SCHEMA if c not in COLUMN_ENCODING]
SORT_COLUMNS = ("hostname", "gpu", "gpu_i_id", "ts")  # generate_day's order; MIG ids null first


def day_path(out_dir: Path, day: date) -> Path:
    """Where the samples of `day` live under a simulator output directory."""
    return Path(out_dir) / "metrics" / f"day={day.isoformat()}" / "part-0.parquet"


def write_day_parquet(frame: pl.DataFrame, out_dir: Path, day: date) -> Path:
    """Write `frame` (RAW_SAMPLE_SCHEMA, one day) and return the file's path.

    The file is written next to its final name and renamed, so a reader never sees a
    half-written part."""
    if frame.schema != pl.Schema(RAW_SAMPLE_SCHEMA):
        raise ValueError(f"frame schema {dict(frame.schema)} is not RAW_SAMPLE_SCHEMA")
    path = day_path(out_dir, day)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    table = frame.to_arrow(compat_level=pl.CompatLevel.newest())  # string views: no copy
    try:
        pq.write_table(
            table,
            partial,
            row_group_size=ROW_GROUP_ROWS,
            compression=COMPRESSION,
            compression_level=COMPRESSION_LEVEL,
            use_dictionary=DICTIONARY_COLUMNS,
            column_encoding=COLUMN_ENCODING,
            sorting_columns=[pq.SortingColumn(table.column_names.index(c), nulls_first=True) for c in SORT_COLUMNS],
        )
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path
