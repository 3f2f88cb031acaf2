"""Read a warehouse the way a person checking it would: a read-only DuckDB connection, or the lake
(the daily tables: pipelines/store.py) through an in-memory DuckDB that never opens the file."""

from __future__ import annotations

import hashlib
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


# What a built month is: the landed rows, the staged jobs, attribution, the marts and the chargeback.
MONTH_TABLES = (
    "raw.dcgm_samples",
    "raw.slurm_sacct",
    "raw.quarantine",
    "staging.stg_dcgm__gpu_hourly",
    "staging.stg_slurm__jobs",
    "marts.fct_job_usage",
    "marts.fct_gpu_hourly",
    "marts.mart_department_monthly",
    "marts.mart_cluster_monthly",
    "intermediate.int_gpu_minutes_attributed",
    "marts.fct_job_flags",
    "marts.mart_user_monthly",
    "marts.fct_chargeback_jobs",
    "marts.fct_chargeback_focus",
    "marts.mart_chargeback_reconciliation",
)


def table_digests(database: Path, tables: tuple[str, ...] = MONTH_TABLES) -> dict[str, str]:
    """A SHA-256 of each table's rows (through the DuckDB file, lake views included) in a
    canonical order: equal digests, equal rows."""
    conn = duckdb.connect(str(database), read_only=True)
    try:
        digests = {}
        for table in tables:
            frame = conn.sql(f"SELECT * FROM {table}").pl()  # table names from a fixed list, never input
            frame = frame.with_columns(pl.col(pl.List(pl.String)).list.join(","), pl.col(pl.Binary).bin.encode("hex"))
            ordered = frame.sort(frame.columns, nulls_last=True)
            digests[table] = hashlib.sha256(ordered.write_csv().encode()).hexdigest()
        return digests
    finally:
        conn.close()
