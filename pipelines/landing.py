"""Recording the daily landings (meta.landings, warehouse/landings.py) from the ingest assets."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime

import duckdb

from warehouse.landings import FAILED, OK, Landing, landing_statement, record_landing
from warehouse.partitions import Statement

DETAIL_CHARS = 500


def utc_now() -> datetime:
    """Now as a naive UTC timestamp (the warehouse convention)."""
    return datetime.now(UTC).replace(tzinfo=None)


def landed(
    cluster: str,
    day: date,
    source: str,
    rows: int,
    quarantined: int,
    screened: int,
    status: str = OK,
    detail: str | None = None,
) -> Statement:
    """The landing to record with the partition write (``replace_partition(also=[...])``)."""
    return landing_statement(Landing(cluster, day, source, utc_now(), status, rows, quarantined, screened, detail))


@contextmanager
def failure_recorded(conn: duckdb.DuckDBPyConnection, cluster: str, day: date, source: str) -> Iterator[None]:
    """Run one cluster's landing; if it raises, record the day as 'failed' (with the error) and re-raise."""
    try:
        yield
    except Exception as exc:
        text = " ".join(f"{type(exc).__name__}: {exc}".split())[:DETAIL_CHARS]
        try:
            record_landing(conn, Landing(cluster, day, source, utc_now(), FAILED, detail=text))
        except duckdb.Error:
            pass  # the warehouse itself failed: the original error is the one to raise
        raise
