"""The state of each GPU-second of capacity, split the way Slurm's ``sreport cluster
utilization`` splits a cluster's time, and the intervals the sources report for it.

Every GPU-second of a cluster's capacity (the observed inventory of each hour) is in exactly one
state. ``allocated`` comes from the runs (jobs and pods); ``down``, ``planned_down`` and
``reserved`` come from intervals the sources report (``DOWNTIME_INTERVAL`` rows); ``idle`` is the
rest. Where several apply to one GPU-second, the first of ``PRECEDENCE`` wins. ``down`` and
``planned_down`` are the platform's: no idle-cost policy charges them to departments.

``sreport`` differs in places, and docs/chargeback.md says where and why.
"""

from __future__ import annotations

import polars as pl

ALLOCATED, DOWN, PLANNED_DOWN, RESERVED, IDLE = "allocated", "down", "planned_down", "reserved", "idle"

# state -> what it means, as the review and the docs print it
STATES: dict[str, str] = {
    ALLOCATED: "held by a job or pod",
    DOWN: "node down or drained, or the GPU missing or failed",
    PLANNED_DOWN: "in a maintenance reservation",
    RESERVED: "in another reservation and not used by a job",
    IDLE: "up, not reserved, not used",
}
PRECEDENCE: tuple[str, ...] = (ALLOCATED, PLANNED_DOWN, DOWN, RESERVED, IDLE)
INTERVAL_STATES: tuple[str, ...] = (DOWN, PLANNED_DOWN, RESERVED)  # states a source interval declares
PLATFORM_STATES: tuple[str, ...] = (DOWN, PLANNED_DOWN)  # never charged to departments

SLURM_EVENT, SLURM_RESERVATION = "slurm_event", "slurm_reservation"
KUBE_NODE_CONDITION, DCGM_DROPOUT, DCGM_XID = "kube_node_condition", "dcgm_dropout", "dcgm_xid"
# source of a downtime interval -> what reported it
INTERVAL_SOURCES: dict[str, str] = {
    SLURM_EVENT: "Slurm node event (sacctmgr show event: DOWN, DRAIN)",
    SLURM_RESERVATION: "Slurm reservation (sacctmgr show reservation)",
    KUBE_NODE_CONDITION: "Kubernetes node condition (kube_node_status_condition Ready, kube_node_spec_unschedulable)",
    DCGM_DROPOUT: "DCGM series stopped while the host's other GPUs reported (fell off the bus)",
    DCGM_XID: "DCGM's last XID error of the GPU is a critical one (DCGM_FI_DEV_XID_ERRORS; contracts/xid.py)",
}


def state_column(state: str) -> str:
    """The column of a state's GPU-seconds in marts.fct_gpu_capacity_split: ``<state>_seconds``."""
    return f"{state}_seconds"


# One interval of one node (gpu null) or one GPU of a node, in one state, as a source reported it.
# Each source's staging table has these columns; intervals are clipped to the day they land in.
DOWNTIME_INTERVAL: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),  # null: every GPU of the host
    "state": pl.String(),  # one of INTERVAL_STATES
    "start_ts": pl.Datetime("us"),  # UTC
    "end_ts": pl.Datetime("us"),  # UTC
    "reason": pl.String(),  # as the source gave it ("" when none)
    "reported_by": pl.String(),  # the user or component that set it ("" when none)
    "source": pl.String(),  # one of INTERVAL_SOURCES
}
