"""DCGM XID downtime, daily: the GPUs whose last XID error is a critical one
(``staging.stg_dcgm__gpu_xid``, downtime intervals; docs/marts.md), read from the cluster's
Prometheus (or OpenMetrics file) beside the samples. Values that are no XID are quarantined in
``raw.quarantine`` (source ``dcgm_xid``) and counted. Hosts that reported samples but have no
XID series are named in a warning and counted: their XID errors cannot be seen, so a faulted GPU
that still reports reads as idle, not down."""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from config.cluster import ClusterConfig
from contracts.capacity_states import DCGM_XID
from pipelines.shrink_guard import guard_rows
from pipelines.step import Step
from pipelines.table_asset import Built, table_asset
from pipelines.tables import RAW_QUARANTINE, STG_DCGM__GPU_HOURLY, STG_DCGM__GPU_XID
from sources.dcgm_xid import XID_METRIC, read_xid
from transforms.staging.stg_dcgm__gpu_xid import (
    ACTIVE_HOURS_SQL,
    ACTIVE_MEAN,
    CARRIED_SQL,
    SCHEMA,
    quarantine_xid,
    screen_xid,
    stg_dcgm__gpu_xid,
)
from warehouse.lake import written_at


def _carried(step: Step, cluster: ClusterConfig) -> pl.DataFrame | None:
    """The previous day's intervals of the cluster that ran to its end; None without that day."""
    before = step.day - timedelta(days=1)
    lake = STG_DCGM__GPU_XID.lake_table
    if written_at(step.store.lake, lake, {"cluster": cluster.name, "day": before}) is None:
        step.log.info(f"{cluster.name}: no XID intervals of {before}: a value carried into {step.day} is judged alone")
        return None
    return step.sql(CARRIED_SQL, [cluster.name, before, step.start])


REPORTING_HOSTS_SQL = "SELECT DISTINCT hostname FROM staging.stg_dcgm__gpu_hourly WHERE cluster = ? AND day = ?"
NAMED_HOSTS = 10  # hosts named in the warning; the count is of all


def _unseen_hosts(step: Step, cluster: ClusterConfig, xid_hosts: frozenset[str] | None) -> int:
    """How many hosts reported samples in the day but no XID series; warns naming them."""
    if xid_hosts is None:
        return 0
    reporting = step.sql(REPORTING_HOSTS_SQL, [cluster.name, step.day])["hostname"].drop_nulls()
    unseen = sorted(set(reporting) - xid_hosts)
    if unseen:
        named = ", ".join(unseen[:NAMED_HOSTS]) + (
            f" and {len(unseen) - NAMED_HOSTS} more" if len(unseen) > NAMED_HOSTS else ""
        )
        step.log.warning(
            f"{cluster.name}: {len(unseen)} of {len(reporting)} hosts reported GPU samples on {step.day} but no "
            f"{XID_METRIC} series ({named}): their XID errors cannot be seen, so a faulted GPU that still reports "
            f"counts as idle, not down. Collect {XID_METRIC} in dcgm-exporter's counters file (its default "
            "counters include it) and scrape it with the other DCGM fields"
        )
    return len(unseen)


def _xid(step: Step, cluster: ClusterConfig) -> tuple[pl.DataFrame, int, int]:
    """One cluster's intervals of the day, the XID points it quarantined, and the hosts that
    reported samples without an XID series."""
    read = read_xid(cluster, step.start, step.end)
    codes, bad = screen_xid(read.values)
    partition = {"cluster": cluster.name, "source": DCGM_XID, "partition_key": step.day.isoformat()}
    step.write(
        quarantine_xid(bad, cluster.name, DCGM_XID, step.day.isoformat()), table=RAW_QUARANTINE, partition=partition
    )
    active = step.sql(ACTIVE_HOURS_SQL, [cluster.name, step.day, ACTIVE_MEAN])
    frame = stg_dcgm__gpu_xid(
        codes, active, cluster.name, step.start, step.end, cluster.sample_step_seconds, _carried(step, cluster)
    )
    guard_rows(step, STG_DCGM__GPU_XID, cluster.name, frame)  # before the day's intervals are replaced
    if bad.height:
        step.log.warning(
            f"{cluster.name}: {bad.height} DCGM_FI_DEV_XID_ERRORS points are no XID or name no GPU; "
            f"see raw.quarantine, source {DCGM_XID}"
        )
    return frame, bad.height, _unseen_hosts(step, cluster, read.hosts)


@table_asset(
    STG_DCGM__GPU_XID,
    reads=[STG_DCGM__GPU_HOURLY],
    kinds=["polars"],
    description="Downtime intervals (DOWNTIME_INTERVAL) of GPUs whose last XID error (DCGM_FI_DEV_XID_ERRORS) is a "
    "critical one (contracts/xid.py), until a reset or the first hour with real activity; clipped to the day.",
)
def stg_dcgm__gpu_xid_asset(step: Step) -> Built:
    parts = [_xid(step, cluster) for cluster in step.clusters]
    frame = pl.concat([p[0] for p in parts]) if parts else pl.DataFrame(schema=SCHEMA)
    seconds = (frame["end_ts"] - frame["start_ts"]).dt.total_seconds().sum() if frame.height else 0
    metadata = {
        "intervals": frame.height,
        "gpu_down_hours": round(float(seconds) / 3600, 3),
        "quarantined_points": sum(p[1] for p in parts),
        "hosts_without_xid_series": sum(p[2] for p in parts),
    }
    return Built(frame, metadata=metadata)
