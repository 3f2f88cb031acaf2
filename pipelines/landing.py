"""Recording the daily landings (meta.landings in the lake, warehouse/landings.py) from the ingest assets.

A source's day is data, empty or broken (contracts/sources.py), and each has its own type here:
data lands with ``landed`` ('ok'); empty (the source answered with nothing) is a ``Gap``
(``empty_day``), landed as 'gap' with its cause; broken (the read raised) becomes ``SourceFailed``
in ``failure_recorded`` ('failed'), which fails the day naming the cluster and the source.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

from contracts.sources import BEFORE_FIRST_SAMPLE, NO_JOBS, NO_SERIES, SACCT, SOURCE_TITLES
from warehouse.landings import FAILED, GAP, LANDED, OK, Landing, landed_rows_before, read_landing

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


class SourceFailed(RuntimeError):
    """A source broke for a cluster's day (unreachable, refused, malformed): the day fails, and
    this message names the cluster, the source and the day before the source's own error."""


@dataclass(frozen=True)
class Gap:
    """A source answered with nothing for a cluster's day: a coverage gap, not a failure.
    ``cause``: one of contracts/sources.py ``GAP_CAUSES``."""

    cluster: str
    day: date
    source: str
    cause: str

    def landing(self) -> Landing:
        """The day's landing: status 'gap', no rows, the cause as its detail."""
        return Landing(self.cluster, self.day, self.source, utc_now(), GAP, 0, 0, 0, self.cause)

    def text(self) -> str:
        return f"{self.cluster}: no data from {self.source} for {self.day} ({self.cause}): landed as a coverage gap"


def record_gap(store: Store, log, gap: Gap) -> Gap:
    """Land a source's empty day as a coverage gap, and say so in the run's ``log`` (at info:
    it is no fault of the run; the review, the CLI summary and close list the month's gaps)."""
    store.land(gap.landing())
    log.info(gap.text())
    return gap


def gap_metadata(gaps: list[Gap]) -> dict[str, dict[str, str]]:
    """A daily asset's materialization metadata on its gaps: ``{"gaps_by_cluster": {cluster: cause}}``."""
    return {"gaps_by_cluster": {gap.cluster: gap.cause for gap in gaps}} if gaps else {}


def empty_day(store: Store, cluster: str, day: date, source: str) -> Gap:
    """The gap of a source that answered with nothing: sacct 'no_jobs'; a series source
    'before_first_sample' when no earlier day of the cluster's source landed rows (as the lake
    holds it when the day lands), else 'no_series'."""
    if source == SACCT:
        return Gap(cluster, day, source, NO_JOBS)
    seen = landed_rows_before(store.conn, store.lake, cluster, source, day)
    return Gap(cluster, day, source, NO_SERIES if seen else BEFORE_FIRST_SAMPLE)


@contextmanager
def failure_recorded(store: Store, cluster: str, day: date, source: str) -> Iterator[None]:
    """Run one cluster's landing; if it raises (the source broke), record the day as 'failed'
    (with the error) and raise ``SourceFailed`` naming the cluster, the source and the day. A
    day that had landed keeps that landing: its rows are untouched (a partition is replaced only
    after a successful read), so a failed re-read changes nothing but the run's outcome."""
    try:
        yield
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        try:
            earlier = read_landing(store.conn, store.lake, cluster, day, source)
            if earlier is None or earlier.status not in LANDED:
                detail = " ".join(text.split())[:DETAIL_CHARS]
                store.land(Landing(cluster, day, source, utc_now(), FAILED, detail=detail))
        except Exception:  # noqa: BLE001 - the lake itself failed: the original error is the one to raise
            pass
        raise SourceFailed(
            f"cluster {cluster!r} {source} ({SOURCE_TITLES.get(source, source)}) failed for {day}: {text}"
        ) from exc
