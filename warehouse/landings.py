"""meta.landings and meta.monthly_builds (migration 0015): what landed, what was built.

``landing_statement`` is passed to ``replace_partition(..., also=[...])`` so a day's landing is
recorded in the transaction that writes its rows; ``record_landing`` records one on its own (a
failure, or a day rejected by a check after it landed). ``month_landings`` and
``latest_build`` read them back for the monthly job's gate and for ``cardhours close``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

import duckdb
import polars as pl

from warehouse.connection import first_row, read_frame

OK, REJECTED, FAILED = "ok", "rejected", "failed"
STARTED, FINISHED = "started", "finished"

_UPSERT = (
    "INSERT INTO meta.landings (cluster, day, source, landed_at, rows, quarantined, screened, status, detail) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (cluster, day, source) DO UPDATE SET "
    "landed_at = excluded.landed_at, rows = excluded.rows, quarantined = excluded.quarantined, "
    "screened = excluded.screened, status = excluded.status, detail = excluded.detail"
)


@dataclass(frozen=True)
class Landing:
    cluster: str
    day: date
    source: str  # "dcgm", "sacct" or "kube" (the raw.quarantine source names)
    landed_at: datetime
    status: str = OK
    rows: int | None = None
    quarantined: int | None = None
    screened: int | None = None
    detail: str | None = None


@dataclass(frozen=True)
class Build:
    month: date
    started_at: datetime | None
    landed_through: datetime | None
    finished_at: datetime | None
    status: str
    accepted_gaps: str | None


def landing_statement(landing: Landing) -> tuple[str, list[object]]:
    """The upsert of one landing, as (sql, params) for ``replace_partition(also=...)``."""
    return _UPSERT, [
        landing.cluster,
        landing.day,
        landing.source,
        landing.landed_at,
        landing.rows,
        landing.quarantined,
        landing.screened,
        landing.status,
        landing.detail,
    ]


def record_landing(conn: duckdb.DuckDBPyConnection, landing: Landing) -> None:
    sql, params = landing_statement(landing)
    conn.execute(sql, params)


def mark_rejected(conn: duckdb.DuckDBPyConnection, day: date, source: str, clusters: list[str], detail: str) -> None:
    """A day that landed but failed a blocking check: its landings become 'rejected'."""
    for cluster in clusters:
        conn.execute(
            "UPDATE meta.landings SET status = ?, detail = ? WHERE cluster = ? AND day = ? AND source = ?",
            [REJECTED, detail, cluster, day, source],
        )


def month_landings(conn: duckdb.DuckDBPyConnection, first: date, end: date) -> pl.DataFrame:
    """Every landing of days in [first, end)."""
    return read_frame(
        conn, "SELECT * FROM meta.landings WHERE day >= ? AND day < ? ORDER BY cluster, source, day", [first, end]
    )


def start_build(
    conn: duckdb.DuckDBPyConnection,
    month: date,
    started_at: datetime,
    landed_through: datetime | None,
    accepted_gaps: str | None,
) -> None:
    conn.execute(
        "INSERT INTO meta.monthly_builds VALUES (?, ?, ?, NULL, ?, ?) ON CONFLICT (month) DO UPDATE SET "
        "started_at = excluded.started_at, landed_through = excluded.landed_through, finished_at = NULL, "
        "status = excluded.status, accepted_gaps = excluded.accepted_gaps",
        [month, started_at, landed_through, STARTED, accepted_gaps],
    )


def finish_build(conn: duckdb.DuckDBPyConnection, month: date, finished_at: datetime) -> None:
    """The month's build is done. Without a recorded start (the chargeback assets materialized
    without the monthly job's gate) it is recorded as built over unknown landings."""
    conn.execute(
        "INSERT INTO meta.monthly_builds (month, finished_at, status) VALUES (?, ?, ?) ON CONFLICT (month) "
        "DO UPDATE SET finished_at = excluded.finished_at, status = excluded.status",
        [month, finished_at, FINISHED],
    )


def latest_build(conn: duckdb.DuckDBPyConnection, month: date) -> Build | None:
    row = first_row(
        conn,
        "SELECT month, started_at, landed_through, finished_at, status, accepted_gaps "
        "FROM meta.monthly_builds WHERE month = ?",
        [month],
    )
    return Build(*row) if row else None
