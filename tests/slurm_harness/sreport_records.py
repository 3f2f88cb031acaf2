"""What slurmdbd recorded, read from the outputs ``downtime.collect`` saves (``-P``, with header).

Times are UTC epoch seconds (the harness runs every command with ``TZ=UTC``); an open end
(``Unknown``, ``None``) is ``None``. TRES strings keep their whole-number entries by name
(``cpu``, ``gres/gpu``, ``gres/gpu:h200``...); sizes such as ``mem=4000M`` are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

OPEN_ENDS = {"", "Unknown", "None"}
SREPORT_COLUMNS = {"Allocated": "alloc", "Down": "down", "PLND Down": "pdown", "Idle": "idle", "Planned": "plan"}


@dataclass(frozen=True)
class Event:
    """A row of ``sacctmgr show event``: the cluster's registration (node "") or a node state."""

    node: str
    start: int
    end: int | None
    state: str  # compact: DRAIN, DOWN*, DRAIN$ ($: the node was in a maintenance reservation)
    reason: str
    tres: dict[str, int]

    @property
    def maint(self) -> bool:
        return "$" in self.state


@dataclass(frozen=True)
class Reservation:
    id: int
    name: str
    flags: frozenset[str]
    nodes: str
    start: int
    end: int
    tres: dict[str, int]


@dataclass(frozen=True)
class Job:
    id: str
    eligible: int | None
    start: int | None
    end: int | None
    req_cpus: int
    tres: dict[str, int]
    resv_id: int  # 0: not in a reservation


def epoch(text: str) -> int | None:
    if text in OPEN_ENDS:
        return None
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp())


def tres(text: str) -> dict[str, int]:
    pairs = (item.split("=", 1) for item in text.split(",") if "=" in item)
    return {name: int(value) for name, value in pairs if value.isdigit()}


def rows(text: str) -> list[dict[str, str]]:
    """``-P`` output with its header line -> one dict per line (lines before the header skipped)."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "|" in line)
    header = lines[at].split("|")
    return [dict(zip(header, line.split("|"), strict=True)) for line in lines[at + 1 :] if line.strip()]


def events(text: str) -> list[Event]:
    return [
        Event(
            node=row["NodeName"],
            start=epoch(row["TimeStart"]) or 0,
            end=epoch(row["TimeEnd"]),
            state=row["State"],
            reason=row["Reason"],
            tres=tres(row["TRES"]),
        )
        for row in rows(text)
    ]


def reservations(text: str) -> list[Reservation]:
    return [
        Reservation(
            id=int(row["ID"]),
            name=row["Name"],
            flags=frozenset(f for f in row["Flags"].split(",") if f),
            nodes=row["NodeName"],
            start=epoch(row["TimeStart"]) or 0,
            end=epoch(row["TimeEnd"]) or 0,
            tres=tres(row["TRES"]),
        )
        for row in rows(text)
    ]


def jobs(text: str) -> list[Job]:
    """``sacct -P -X --format=downtime.SACCT_RESV_FORMAT``."""
    return [
        Job(
            id=row["JobIDRaw"],
            eligible=epoch(row["Eligible"]),
            start=epoch(row["Start"]),
            end=epoch(row["End"]),
            req_cpus=int(row["ReqCPUS"]),
            tres=tres(row["AllocTRES"]),
            resv_id=int(row["ReservationId"] or 0),
        )
        for row in rows(text)
    ]


def utilization(text: str) -> dict[str, dict[str, int]]:
    """``sreport -P cluster utilization -T ... -t seconds`` -> TRES name -> category -> seconds."""
    found = {}
    for row in rows(text):
        found[row["TRES Name"]] = {key: int(row[column]) for column, key in SREPORT_COLUMNS.items()}
        found[row["TRES Name"]]["reported"] = int(row["Reported"])
    return found
