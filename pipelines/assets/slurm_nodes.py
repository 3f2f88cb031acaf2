"""Slurm node records, daily: a snapshot of ``scontrol show node --oneliner`` (command mode: read
when the day lands; file mode: the saved output) in ``raw.slurm_node_snapshots``, and per node and
hour the GPUs and MIG instances of the snapshot in effect (``staging.stg_slurm__node_capacity``,
read by the observed inventory), for the clusters whose ``[clusters.slurm]`` names where node
records come from (``ClusterConfig.sources``: ``slurm_nodes``; docs/slurm.md, "Node records").
Lines that cannot be read are quarantined in ``raw.quarantine`` (source ``slurm_nodes``) and
counted in the landing."""

from __future__ import annotations

import polars as pl
from dagster import MaterializeResult

from contracts.slurm_nodes import SLURM_NODE_SCHEMA
from contracts.sources import SLURM_NODES
from pipelines.landing import failure_recorded, landed
from pipelines.step import Step
from pipelines.table_asset import Built, table_asset
from pipelines.tables import RAW_QUARANTINE, RAW_SLURM_NODE_SNAPSHOTS, STG_SLURM__NODE_CAPACITY
from sources.slurm_nodes import read_nodes
from transforms.staging.stg_slurm__node_capacity import SCHEMA, stg_slurm__node_capacity


def _kept(step: Step, cluster) -> pl.DataFrame | None:
    """Command mode, a day landed again: the snapshot it holds when read after the day ended (the
    records read now would say nothing more of that day, and it stands for the hours after it)."""
    if cluster.slurm.scontrol_command is None:
        return None
    held = step.read(RAW_SLURM_NODE_SNAPSHOTS, cluster=cluster.name, with_period=False)
    return held if held.height and held["read_at"].min() >= step.end else None


def _land_cluster(step: Step, cluster) -> tuple[int, int]:
    """One cluster's snapshot for the day: (rows landed, lines quarantined)."""
    kept = _kept(step, cluster)
    if kept is not None:
        step.log.info(f"{cluster.name}: {step.day} keeps the node records read at {kept['read_at'].min()}")
        landing = landed(cluster.name, step.day, SLURM_NODES, kept.height, 0, kept.height)
        return step.write(kept.select(list(SLURM_NODE_SCHEMA)), cluster=cluster.name, also=[landing]), 0
    rows, bad = read_nodes(cluster.slurm, cluster.name)
    partition = {"cluster": cluster.name, "source": SLURM_NODES, "partition_key": step.day.isoformat()}
    bad = bad.with_columns(partition_key=pl.lit(step.day.isoformat()))
    step.write(bad, table=RAW_QUARANTINE, partition=partition)
    landing = landed(cluster.name, step.day, SLURM_NODES, rows.height, bad.height, rows.height + bad.height)
    return step.write(rows, cluster=cluster.name, also=[landing]), bad.height


@table_asset(
    RAW_SLURM_NODE_SNAPSHOTS,
    reads=[RAW_SLURM_NODE_SNAPSHOTS],
    description="Slurm node records (scontrol show node --oneliner): each node's GPU GRES, state and reason, "
    "read when the day landed or from a saved output (docs/slurm.md, Node records).",
)
def raw_slurm_node_snapshots(step: Step) -> MaterializeResult:
    rows: dict[str, int] = {}
    quarantined: dict[str, int] = {}
    for cluster in step.clusters_with(SLURM_NODES):
        with failure_recorded(step.store, cluster.name, step.day, SLURM_NODES):
            rows[cluster.name], quarantined[cluster.name] = _land_cluster(step, cluster)
        if quarantined[cluster.name]:
            step.log.warning(
                f"{cluster.name}: {quarantined[cluster.name]} scontrol node lines quarantined; "
                f"see raw.quarantine, source {SLURM_NODES}"
            )
    return MaterializeResult(
        metadata={
            "rows": sum(rows.values()),
            "rows_by_cluster": rows,
            "quarantined_rows": sum(quarantined.values()),
            "quarantined_by_cluster": quarantined,
        }
    )


# The snapshots the day needs: the one in effect at its start (the latest read at or before it)
# and those read during it.
_SNAPSHOTS_SQL = f"""
SELECT {", ".join(SLURM_NODE_SCHEMA)}, day FROM raw.slurm_node_snapshots s
WHERE cluster = ? AND read_at < ? AND read_at >= coalesce(
    (SELECT max(read_at) FROM raw.slurm_node_snapshots WHERE cluster = ? AND read_at <= ?), ?)
"""


def _capacity(step: Step, cluster: str) -> pl.DataFrame:
    snapshots = step.sql(_SNAPSHOTS_SQL, [cluster, step.end, cluster, step.start, step.start])
    return stg_slurm__node_capacity(snapshots, step.start, step.end)


@table_asset(
    STG_SLURM__NODE_CAPACITY,
    reads=[RAW_SLURM_NODE_SNAPSHOTS],
    kinds=["polars"],
    description="Per Slurm node, hour and MIG profile (null: whole GPUs): the GPUs its GRES declared in the "
    "scontrol snapshot in effect (the latest read before the hour's end).",
)
def stg_slurm__node_capacity_asset(step: Step) -> Built:
    parts = [_capacity(step, cluster.name) for cluster in step.clusters_with(SLURM_NODES)]
    frame = pl.concat(parts) if parts else pl.DataFrame(schema=SCHEMA)
    return Built(frame, metadata={"nodes": frame.select("cluster", "hostname").n_unique() if frame.height else 0})
