"""Read a warehouse the way a person checking it would: a read-only DuckDB connection, or the lake
(the daily tables: pipelines/store.py) through an in-memory DuckDB that never opens the file."""

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


def read_lake(config_path: Path, sql: str, params: list | None = None) -> pl.DataFrame:
    """``sql`` over the lake tables of the config's lake (raw.*, the daily staging, meta.landings)."""
    from config import load_config
    from pipelines.store import open_lake

    conn = open_lake(load_config(config_path))
    try:
        return conn.sql(sql, params=params).pl()
    finally:
        conn.close()
