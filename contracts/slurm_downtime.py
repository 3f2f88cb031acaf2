"""The sacctmgr records cardhours reads Slurm's downtime from (sources/slurm_downtime.py), and
the simulator writes (simulate/node_events.py): each kind's ``format=`` list, the header names
``--parsable2`` prints for them, and the columns they land in."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Record:
    """One kind of sacctmgr record: its ``show`` entity, ``format=`` list, the header names
    sacctmgr prints for them, and the columns they land in. The last field may hold ``|``
    (free text: a node event's Reason), so it is put last and takes the surplus fields."""

    entity: str
    fields: tuple[str, ...]  # format= names, in order
    headers: tuple[str, ...]  # what --parsable2 prints in the header line for each
    columns: tuple[str, ...]  # our column for each
    filters: tuple[str, ...] = ()
    free_text_last: bool = False

    @property
    def format(self) -> str:
        return ",".join(self.fields)


EVENTS = Record(
    "event",
    ("Cluster", "NodeName", "Start", "End", "State", "User", "Reason"),
    ("Cluster", "NodeName", "TimeStart", "TimeEnd", "State", "User", "Reason"),
    ("slurm_cluster", "node_list", "start_time", "end_time", "node_state", "reported_by", "reason"),
    ("event=node",),
    free_text_last=True,
)
RESERVATIONS = Record(
    "reservation",
    ("Cluster", "Name", "ID", "Start", "End", "NodeNames", "Flags"),
    ("Cluster", "Name", "ID", "TimeStart", "TimeEnd", "NodeName", "Flags"),
    ("slurm_cluster", "name", "reservation_id", "start_time", "end_time", "node_list", "flags"),
)
