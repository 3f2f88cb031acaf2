"""DCGM XID downtime, daily: the GPUs whose last XID error is a critical one
(``staging.stg_dcgm__gpu_xid``, downtime intervals; docs/marts.md), read from the cluster's
Prometheus (or OpenMetrics file) beside the samples. Values that are no XID are quarantined in
``raw.quarantine`` (source ``dcgm_xid``) and counted."""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from config.cluster import ClusterConfig
from contracts.capacity_states import DCGM_XID
from pipelines.shrink_guard import guard_rows
from pipelines.step import Step
from pipelines.table_asset import Built, table_asset
from pipelines.tables import RAW_QUARANTINE, STG_DCGM__GPU_HOURLY, STG_DCGM__GPU_XID
from sources.dcgm_xid import read_xid
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


def _xid(step: Step, cluster: ClusterConfig) -> tuple[pl.DataFrame, int]:
    """One cluster's intervals of the day, and the XID points it quarantined."""
    codes, bad = screen_xid(read_xid(cluster, step.start, step.end))
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
    return frame, bad.height


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
    }
    return Built(frame, metadata=metadata)
