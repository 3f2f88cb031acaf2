"""Read a warehouse the way a person checking it would: a read-only DuckDB connection."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl


def read(database: Path, sql: str, params: list | None = None) -> pl.DataFrame:
    conn = duckdb.connect(str(database), read_only=True)
    try:
        return conn.sql(sql, params=params).pl()
    finally:
        conn.close()
