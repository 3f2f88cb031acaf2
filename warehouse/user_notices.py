"""meta.user_notices (migration 0029): the notices sent to users, and the month's flags they are made from.

``month_flags`` reads a month's marts.fct_job_flags rows with each run's ``end_time`` (from
marts.fct_job_usage); ``read_ledger`` the notices already sent; ``record_notice`` adds one, in
its own transaction, right after its message was accepted by the relay. Bound parameters only.
"""

from __future__ import annotations

import hashlib
from datetime import date, datetime

import duckdb
import polars as pl

from warehouse.connection import first_row, read_frame

TABLE = "meta.user_notices"
SCHEMA: dict[str, pl.DataType] = {
    "user_name": pl.String(),
    "month": pl.Date(),
    "sent_at": pl.Datetime("us"),
    "address": pl.String(),
    "jobs": pl.List(pl.String()),  # the listed jobs, "cluster:job_id"
    "wasted_gpu_hours": pl.Float64(),
    "digest": pl.String(),  # sha256 of the body sent
}

FLAGS_SQL = """
    SELECT f.*, u.end_time
    FROM marts.fct_job_flags f
    LEFT JOIN marts.fct_job_usage u
      ON u.cluster = f.cluster AND u.job_id_raw = f.job_id_raw
     AND u.start_time IS NOT DISTINCT FROM f.start_time AND u.month = f.month
    WHERE f.month = ?
    ORDER BY f.cluster, f.job_id_raw, f.start_time, f.reason"""


def month_built(conn: duckdb.DuckDBPyConnection, month: date) -> bool:
    """Whether the month's job marts hold rows (the month was built)."""
    return first_row(conn, "SELECT count(*) FROM marts.fct_job_usage WHERE month = ?", [month])[0] > 0


def month_flags(conn: duckdb.DuckDBPyConnection, month: date) -> pl.DataFrame:
    return read_frame(conn, FLAGS_SQL, [month])


def has_ledger(conn: duckdb.DuckDBPyConnection) -> bool:
    """False on a warehouse opened read-only before migration 0029 (no notice was ever sent)."""
    sql = "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'meta' AND table_name = 'user_notices'"
    return first_row(conn, sql)[0] > 0


def read_ledger(conn: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    if not has_ledger(conn):
        return pl.DataFrame(schema=SCHEMA)
    return read_frame(conn, f"SELECT {', '.join(SCHEMA)} FROM {TABLE} ORDER BY sent_at, user_name").cast(SCHEMA)


def digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def record_notice(
    conn: duckdb.DuckDBPyConnection,
    user: str,
    month: date,
    sent_at: datetime,
    address: str,
    jobs: list[str],
    wasted_gpu_hours: float,
    body: str,
) -> None:
    """One sent notice (a second one for the same user and month is an error: it was sent once)."""
    conn.execute(
        f"INSERT INTO {TABLE} ({', '.join(SCHEMA)}) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [user, month, sent_at, address, jobs, wasted_gpu_hours, digest(body)],
    )
