"""Record a month as landed (meta.landings), as the daily ingest assets would."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb

from warehouse.books.ledger import next_month
from warehouse.lake import refresh
from warehouse.landings import LANDINGS, Landing, write_landing

LANDED_AT = datetime(2026, 1, 1)


def land_month(
    conn: duckdb.DuckDBPyConnection,
    lake: Path,
    month: date,
    clusters: dict[str, list[str]],
    landed_at: datetime = LANDED_AT,
    skip: set[date] | None = None,
) -> int:
    """An 'ok' landing of every day of ``month`` for each cluster and source (``skip``: days
    left out); returns how many were recorded."""
    count, day = 0, month
    while day < next_month(month):
        if day not in (skip or set()):
            for cluster, sources in clusters.items():
                for source in sources:
                    write_landing(
                        conn, lake, Landing(cluster, day, source, landed_at, rows=100, quarantined=0, screened=100)
                    )
                    count += 1
        day += timedelta(days=1)
    refresh(conn, lake, LANDINGS)  # meta.landings on conn sees them all
    return count
