"""Late accounting: Slurm records change after the day they describe, and the days are read again.

A job still running when its first day lands has no End in that day's rows; slurmdbd also lags
the controller (seconds, or hours while it was down). So each day's sacct ingest reads the
``[clusters.slurm] lookback_days`` days before it again (``earlier_days``) and lands those whose
records changed since they landed (``changed``) as a new version of the day: its rows, its
quarantine and its landing replaced, the retention guard applying as to any re-read
(pipelines/shrink_guard.py). Days not landed are left to their own run. ``cardhours run --month``
finds the landed days whose records may still change (``open_days``: a job not finished, or
finished without an End) and reads those again the same way (``changed_days``).

Two reads of a day differ in ``ElapsedRaw`` while a job runs (it counts up), so that field is
not compared: every other sacct field of every row is.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

import polars as pl
from dagster import AssetMaterialization

from config import Config
from config.cluster import ClusterConfig
from contracts.schemas import SACCT_FIELDS
from pipelines.resources import CardhoursResource
from pipelines.store import Span, Store, open_lake
from pipelines.tables import RAW_SLURM_SACCT
from transforms.helpers.slurm_parse import UNSET_TIMES, state_name
from transforms.helpers.slurm_policy import TERMINAL_STATES
from warehouse.books.landings import SACCT
from warehouse.landings import FAILED, read_landing

if TYPE_CHECKING:
    from pipelines.step import Step

SacctRead = tuple[pl.DataFrame, pl.DataFrame]  # raw rows, quarantined lines
_TICKING = {SACCT_FIELDS["ElapsedRaw"]}  # changes while a job runs: not a change of its record
COMPARED = [column for column in SACCT_FIELDS.values() if column not in _TICKING]


def day_window(day: date) -> tuple[datetime, datetime]:
    """The UTC day as naive [start, end)."""
    start = datetime(day.year, day.month, day.day)
    return start, start + timedelta(days=1)


def earlier_days(day: date, lookback: int) -> list[date]:
    """The ``lookback`` days before ``day``, oldest first."""
    return [day - timedelta(days=back) for back in range(lookback, 0, -1)]


def records(raw: pl.DataFrame) -> pl.DataFrame:
    """What is compared of a day's rows: every sacct field but the ticking ones, in one order."""
    return raw.select(COMPARED).sort(COMPARED, nulls_last=True)


def changed(landed: pl.DataFrame, new: pl.DataFrame) -> bool:
    """Whether a new read of a day differs from its landed rows (more, fewer or other records)."""
    return not records(landed).equals(records(new))


def open_records(raw: pl.DataFrame) -> pl.DataFrame:
    """Rows whose record may still change: not in a terminal state, or without an End."""
    ended = ~pl.col("end_time").str.strip_chars().is_in(UNSET_TIMES) & pl.col("end_time").is_not_null()
    return raw.filter(~state_name().is_in(TERMINAL_STATES) | ~ended)


def read_day(cardhours: CardhoursResource, cluster: str, day: date) -> SacctRead:
    """The day's sacct rows as its own ingest reads them."""
    start, end = day_window(day)
    return cardhours.sacct_rows(cluster, day, start, end)


def landed_rows(store: Store, cluster: str, day: date) -> pl.DataFrame | None:
    """The day's landed sacct rows; None when the day has not landed (no landing, or 'failed')."""
    landing = read_landing(store.conn, store.lake, cluster, day, SACCT)
    if landing is None or landing.status == FAILED:
        return None
    return store.read(RAW_SLURM_SACCT, {"cluster": cluster, "day": day})


def lookback(step: Step, cluster: ClusterConfig, land: Callable[[date, SacctRead], int]) -> dict[str, str]:
    """Read the days of ``cluster``'s lookback before the step's day again, and ``land(day, read)``
    (rows landed) those whose records changed, each recorded in Dagster as a materialization of
    its own day; what became of each day: ``unchanged``, ``re-landed`` or ``not landed``."""
    assert cluster.slurm is not None
    outcome: dict[str, str] = {}
    for earlier in earlier_days(step.day, cluster.slurm.lookback_days):
        landed = landed_rows(step.store, cluster.name, earlier)
        if landed is None:
            outcome[earlier.isoformat()] = "not landed"
            continue
        read = read_day(step.cardhours, cluster.name, earlier)
        if not changed(landed, read[0]):
            outcome[earlier.isoformat()] = "unchanged"
            continue
        rows = land(earlier, read)
        metadata = {"cluster": cluster.name, "rows": rows, "rows_before": landed.height, "read_again_by": str(step.day)}
        step.context.log_event(AssetMaterialization(step.key, partition=earlier.isoformat(), metadata=metadata))
        step.log.info(f"{cluster.name}: sacct records of {earlier} changed since they landed: landed again")
        outcome[earlier.isoformat()] = "re-landed"
    return outcome


def open_days(store: Store, cluster: str, days: list[date]) -> list[date]:
    """The landed ``days`` of ``cluster`` holding a record that may still change (``open_records``)."""
    if not days:
        return []
    span = Span(min(days), max(days) + timedelta(days=1))
    rows = store.read(RAW_SLURM_SACCT, {"cluster": cluster, "day": span}, columns="day, state, end_time")
    found = set(open_records(rows)["day"].to_list())
    return [day for day in days if day in found]


def changed_days(store: Store, cardhours: CardhoursResource, cluster: str, days: list[date]) -> list[date]:
    """The landed ``days`` of ``cluster`` with open records whose sacct records changed since."""
    found = []
    for day in open_days(store, cluster, days):
        landed = landed_rows(store, cluster, day)
        if landed is not None and changed(landed, read_day(cardhours, cluster, day)[0]):
            found.append(day)
    return found


def month_changed_days(config_path: str, config: Config, days: list[date]) -> list[date]:
    """The landed ``days`` whose sacct records changed since they landed, for any Slurm cluster
    (``changed_days``): what ``cardhours run --month`` reads again besides the days not landed."""
    cardhours = CardhoursResource(config_path=config_path)
    conn = open_lake(config)
    try:
        store = Store(conn, config.warehouse.lake)
        found: set[date] = set()
        for cluster in config.clusters:
            if cluster.slurm is not None:
                found.update(changed_days(store, cardhours, cluster.name, days))
    finally:
        conn.close()
    return sorted(found)
