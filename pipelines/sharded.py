"""The daily DCGM rollups in shards of hosts (``transforms.helpers.host_ranges``): each cluster's
partition of the rollup written range after range, so a step holds one range's samples and
rollup rows at a time, however many GPUs the cluster has."""

from __future__ import annotations

from collections.abc import Callable

from config.cluster import ClusterConfig
from pipelines.step import Step
from pipelines.tables import Table
from transforms.helpers.host_ranges import HostRange, host_ranges
from warehouse.partitions import Frame


def day_host_ranges(step: Step, table: Table, cluster: ClusterConfig) -> list[HostRange]:
    """The host ranges of ``cluster``'s rows of ``table`` in the step's day, at most the cluster's
    ``metrics.gpus_per_shard`` GPUs each."""
    instances = step.sql(
        f"SELECT DISTINCT hostname, gpu, gpu_i_id FROM {table.name} WHERE cluster = ? AND {table.period} = ?",
        [cluster.name, step.period],
    )
    return host_ranges(instances, cluster.metrics.gpus_per_shard)


def write_by_host_ranges(step: Step, read: Table, build: Callable[[ClusterConfig, HostRange], Frame]) -> dict[str, int]:
    """For each configured cluster, its partition of the step's table built range by range of
    ``read``'s hosts (``build(cluster, hosts)``) and appended as it comes; rows per cluster."""
    rows: dict[str, int] = {}
    for cluster in step.clusters:
        with step.writer(cluster=cluster.name) as out:
            for hosts in day_host_ranges(step, read, cluster):
                out.append(build(cluster, hosts))
        rows[cluster.name] = out.rows
    return rows
