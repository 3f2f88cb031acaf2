"""meta.landings (in the lake) and meta.monthly_builds (migration 0015): what landed, what was built.

A day's landing is one row per source, cluster and day, stored as a small Parquet file in the
lake (``LANDINGS``: ``<lake>/meta/landings/source=…/cluster=…/day=…/part-0.parquet``), written
after the day's rows (pipelines/store.py), so the lake never holds a landing without its
data; ``meta.landings`` is a view over those files. ``write_landing`` records one (ok, a
failure, or a day rejected by a check after it landed: ``mark_rejected``). ``month_landings``
and ``latest_build`` read them back for the monthly job's gate and for ``cardhours close``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path

import duckdb
import polars as pl

from warehouse.connection import first_row, read_frame
from warehouse.lake import LakeTable, partition_file, refresh, write_partition

# A day's landing status (docs/marts.md, "Landings and coverage gaps"): 'ok' (rows landed), 'gap'
# (the source answered with nothing: a coverage gap, ``detail`` its cause, contracts/sources.py
# GAP_CAUSES), 'rejected' (landed, then a blocking check failed), 'failed' (the source broke).
OK, GAP, REJECTED, FAILED = "ok", "gap", "rejected", "failed"
LANDED = (OK, GAP)  # the day is landed: not read again, and the month may build over it
STARTED, FINISHED = "started", "finished"

LANDINGS = LakeTable("meta.landings", ("source", "cluster", "day"))


@dataclass(frozen=True)
class Landing:
    cluster: str
    day: date
    source: str  # contracts/sources.py: "dcgm", "sacct" or "kube" (the raw.quarantine source names)
    landed_at: datetime
    status: str = OK
    rows: int | None = None
    quarantined: int | None = None
    screened: int | None = None
    detail: str | None = None  # a failure's error, a rejection's check, a gap's cause


LANDING_SCHEMA = {
    "cluster": pl.String,
    "day": pl.Date,
    "source": pl.String,
    "landed_at": pl.Datetime("us"),
    "status": pl.String,
    "rows": pl.Int64,
    "quarantined": pl.Int64,
    "screened": pl.Int64,
    "detail": pl.String,
}


@dataclass(frozen=True)
class Build:
    month: date
    started_at: datetime | None
    landed_through: datetime | None
    finished_at: datetime | None
    status: str
    accepted_gaps: str | None


def write_landing(conn: duckdb.DuckDBPyConnection, lake: Path, landing: Landing) -> None:
    """Record ``landing`` (replacing the day's earlier one), as its own file in the lake."""
    row = {field: [getattr(landing, field)] for field in Landing.__dataclass_fields__}
    frame = pl.DataFrame(row, schema=LANDING_SCHEMA)
    write_partition(
        conn, lake, LANDINGS, frame, {"source": landing.source, "cluster": landing.cluster, "day": landing.day}
    )


def record_landing(conn: duckdb.DuckDBPyConnection, lake: Path, landing: Landing) -> None:
    """``write_landing``, and ``meta.landings`` on ``conn`` made a view over the lake's landings
    again, so it sees this one (and every other)."""
    write_landing(conn, lake, landing)
    refresh(conn, lake, LANDINGS)


def read_landing(conn: duckdb.DuckDBPyConnection, lake: Path, cluster: str, day: date, source: str) -> Landing | None:
    """The day's landing as recorded, None if none was."""
    path = partition_file(lake, LANDINGS, {"source": source, "cluster": cluster, "day": day})
    if not path.is_file():
        return None
    values = read_frame(conn, "SELECT * FROM read_parquet(?)", [str(path)]).row(0, named=True)
    return Landing(
        cluster, day, source, **{k: values[k] for k in LANDING_SCHEMA if k not in ("cluster", "day", "source")}
    )


def landed_rows_before(conn: duckdb.DuckDBPyConnection, lake: Path, cluster: str, source: str, day: date) -> bool:
    """Whether a day before ``day`` landed rows of the cluster's source (as the lake holds it now).
    Newest day first: when the source had data, the day before usually answers at once."""
    here = partition_file(lake, LANDINGS, {"source": source, "cluster": cluster, "day": day}).parent
    earlier = sorted((path for path in here.parent.glob("day=*") if path.name < here.name), reverse=True)
    for path in earlier:
        landing = read_landing(conn, lake, cluster, date.fromisoformat(path.name.removeprefix("day=")), source)
        if landing is not None and landing.status != FAILED and landing.rows:
            return True
    return False


def mark_rejected(
    conn: duckdb.DuckDBPyConnection, lake: Path, day: date, source: str, clusters: list[str], detail: str
) -> None:
    """A day that landed but failed a blocking check: its landings become 'rejected'."""
    for cluster in clusters:
        landing = read_landing(conn, lake, cluster, day, source)
        if landing is not None:
            write_landing(conn, lake, replace(landing, status=REJECTED, detail=detail))


def month_landings(conn: duckdb.DuckDBPyConnection, first: date, end: date) -> pl.DataFrame:
    """Every landing of days in [first, end)."""
    return read_frame(
        conn, "SELECT * FROM meta.landings WHERE day >= ? AND day < ? ORDER BY cluster, source, day", [first, end]
    )


def newest_landings(conn: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Per cluster and source: the newest ``landed_at`` of a landed day ('ok' or a 'gap': the
    source answered), any day."""
    return read_frame(
        conn,
        "SELECT cluster, source, max(landed_at) AS landed_at FROM meta.landings WHERE list_contains(?, status) "
        "GROUP BY ALL",
        [list(LANDED)],
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
