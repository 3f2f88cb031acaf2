"""Recording the daily landings (meta.landings in the lake, warehouse/landings.py) from the ingest assets."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

from warehouse.landings import FAILED, OK, Landing, read_landing

if TYPE_CHECKING:
    from pipelines.store import Store

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
) -> Landing:
    """The landing to record after the partition write (``Step.write(also=[...])``)."""
    return Landing(cluster, day, source, utc_now(), status, rows, quarantined, screened, detail)


@contextmanager
def failure_recorded(store: Store, cluster: str, day: date, source: str) -> Iterator[None]:
    """Run one cluster's landing; if it raises, record the day as 'failed' (with the error) and
    re-raise. A day that had landed 'ok' keeps that landing: its rows are untouched (a partition
    is replaced only after a successful read), so a failed re-read changes nothing but the run's
    outcome."""
    try:
        yield
    except Exception as exc:
        text = " ".join(f"{type(exc).__name__}: {exc}".split())[:DETAIL_CHARS]
        try:
            earlier = read_landing(store.conn, store.lake, cluster, day, source)
            if earlier is None or earlier.status != OK:
                store.land(Landing(cluster, day, source, utc_now(), FAILED, detail=text))
        except Exception:  # noqa: BLE001 - the lake itself failed: the original error is the one to raise
            pass
        raise
