"""Slurm node events and reservations as downtime intervals of one day (``DOWNTIME_INTERVAL``).

A node event (``sacctmgr show event``: DOWN, DRAIN, FAIL... with reason, user and times) is
``down`` on each host of its node list; an event still open (End ``Unknown``) lasts until the
time of the read (``as_of``). A reservation (``sacctmgr show reservation``) is ``planned_down``
when its flags hold ``MAINT``, else ``reserved``, on each of its nodes. Every interval is clipped
to the day; rows of another Slurm cluster (a saved file of several) are left out. A row whose
times or node list cannot be parsed, or that ends before it starts, is quarantined with its
reason, naming the field and the value.
"""

from __future__ import annotations

import json
import re
from datetime import datetime

import polars as pl

from contracts.capacity_states import (
    DOWN,
    DOWNTIME_INTERVAL,
    PLANNED_DOWN,
    RESERVED,
    SLURM_EVENT,
    SLURM_RESERVATION,
)
from contracts.hostlist import HostlistError, expand
from contracts.schemas import QUARANTINE_SCHEMA
from contracts.sources import SLURM_DOWNTIME

SCHEMA = DOWNTIME_INTERVAL
EVENT_SOURCE, RESERVATION_SOURCE = SLURM_EVENT, SLURM_RESERVATION
MAINT_FLAG = "MAINT"
OPEN_END = ("Unknown", "None", "")
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
_UID = re.compile(r"\(\d+\)$")


class _Bad(ValueError):
    """A value of a row that cannot be used: the quarantine reason."""


def _time(value: str, field: str) -> datetime:
    try:
        return datetime.strptime(value.strip(), _TIME_FORMAT)
    except ValueError:
        raise _Bad(f"UNPARSABLE_FIELD: {field} {value!r} is not a time") from None


def _hosts(value: str) -> list[str]:
    try:
        hosts = expand(value)
    except HostlistError as exc:
        raise _Bad(f"UNPARSABLE_FIELD: node list {value!r}: {exc}") from None
    if not hosts:
        raise _Bad(f"UNPARSABLE_FIELD: node list {value!r} names no node")
    return hosts


def _span(row: dict, as_of: datetime) -> tuple[datetime, datetime]:
    start = _time(row["start_time"], "Start")
    end = as_of if row["end_time"].strip() in OPEN_END else _time(row["end_time"], "End")
    if end < start and row["end_time"].strip() not in OPEN_END:
        raise _Bad(f"END_BEFORE_START: End {row['end_time']} is before Start {row['start_time']}")
    return start, end


def _event(row: dict) -> tuple[str, str, str]:
    return DOWN, row["reason"], _UID.sub("", row["reported_by"].strip())


def _reservation(row: dict) -> tuple[str, str, str]:
    flags = {flag.strip().upper() for flag in row["flags"].split(",")}
    return (PLANNED_DOWN if MAINT_FLAG in flags else RESERVED), row["name"], ""


def _intervals(
    rows: pl.DataFrame, kind, source: str, cluster: str, window: tuple[datetime, datetime], as_of: datetime
) -> tuple[list[dict], list[dict]]:
    first, last = window
    out, bad = [], []
    for row in rows.iter_rows(named=True):
        try:
            start, end = _span(row, min(as_of, last))
            hosts = _hosts(row["node_list"])
        except _Bad as exc:
            bad.append(_quarantined(cluster, first, row, str(exc)))
            continue
        start, end = max(start, first), min(end, last)
        if end <= start:
            continue
        state, reason, by = kind(row)
        out += [
            {"cluster": cluster, "hostname": host, "gpu": None, "state": state, "start_ts": start, "end_ts": end}
            | {"reason": reason, "reported_by": by, "source": source}
            for host in hosts
        ]
    return out, bad


def _quarantined(cluster: str, day_start: datetime, row: dict, reason: str) -> dict:
    line = "|".join(str(value) for key, value in row.items() if key != "location")
    return {
        "cluster": cluster,
        "source": SLURM_DOWNTIME,
        "partition_key": day_start.date().isoformat(),
        "location": row["location"],
        "reason": reason,
        "payload": json.dumps({"line": line}),
        "n_rows": 1,
    }


def _of_cluster(rows: pl.DataFrame, slurm_cluster: str) -> pl.DataFrame:
    return rows.filter(pl.col("slurm_cluster").str.to_lowercase() == slurm_cluster.lower())


def stg_slurm__downtime(
    events: pl.DataFrame,
    reservations: pl.DataFrame,
    *,
    cluster: str,
    slurm_cluster: str,
    window: tuple[datetime, datetime],
    as_of: datetime,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(intervals of the day, quarantined rows) from sacctmgr rows (``sources.slurm_downtime``).
    ``window``: the day [start, end); ``as_of``: when the records were read (an open event ends there)."""
    got_events, bad_events = _intervals(
        _of_cluster(events, slurm_cluster), _event, EVENT_SOURCE, cluster, window, as_of
    )
    got_resv, bad_resv = _intervals(
        _of_cluster(reservations, slurm_cluster), _reservation, RESERVATION_SOURCE, cluster, window, as_of
    )
    intervals = pl.DataFrame(got_events + got_resv, schema=SCHEMA)
    intervals = intervals.unique(maintain_order=True).sort(
        "hostname", "start_ts", "end_ts", "source", "state", "reason"
    )
    return intervals, pl.DataFrame(bad_events + bad_resv, schema=QUARANTINE_SCHEMA)
