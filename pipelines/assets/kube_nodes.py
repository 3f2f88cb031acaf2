"""Kubernetes nodes, daily: the GPUs and MIG instances each node advertised per hour
(``staging.stg_kube__node_capacity``, read by the observed inventory) and the nodes' downtime
intervals (``staging.stg_kube__node_downtime``: not Ready, cordoned), from the node series the
Kubernetes landing keeps as runs (``raw.kube_node_runs``; docs/kubernetes.md, "Nodes")."""

from __future__ import annotations

import polars as pl

from config.cluster import ClusterConfig
from pipelines.assets.kube import kube_step_seconds
from pipelines.step import Step
from pipelines.table_asset import Built, table_asset
from pipelines.tables import RAW_KUBE_NODE_RUNS, STG_KUBE__NODE_CAPACITY, STG_KUBE__NODE_DOWNTIME
from sources.kube.landing import SOURCE
from transforms.staging.stg_kube__node_capacity import SCHEMA as CAPACITY_SCHEMA
from transforms.staging.stg_kube__node_capacity import stg_kube__node_capacity
from transforms.staging.stg_kube__node_downtime import SCHEMA as DOWNTIME_SCHEMA
from transforms.staging.stg_kube__node_downtime import stg_kube__node_downtime


def _capacity(step: Step, cluster: ClusterConfig) -> pl.DataFrame:
    kube = cluster.kubernetes
    assert kube is not None
    return stg_kube__node_capacity(
        step.read(RAW_KUBE_NODE_RUNS, cluster=cluster.name),
        step.start,
        step.end,
        kube_step_seconds(cluster),
        capacity_metric=kube.node_metric_names.node_capacity,
        labels_metric=kube.node_metric_names.node_labels,
        gpu_resource=kube.gpu_resource,
        mig_resource_prefix=kube.mig_resource_prefix,
    )


@table_asset(
    STG_KUBE__NODE_CAPACITY,
    reads=[RAW_KUBE_NODE_RUNS],
    kinds=["polars"],
    description="Per Kubernetes node, hour and MIG profile (null: whole GPUs): the count the node advertised "
    "(kube_node_status_capacity) at its last scrape in the hour.",
)
def stg_kube__node_capacity_asset(step: Step) -> Built:
    parts = [_capacity(step, cluster) for cluster in step.clusters_with(SOURCE)]
    frame = pl.concat(parts) if parts else pl.DataFrame(schema=CAPACITY_SCHEMA)
    return Built(frame, metadata={"nodes": frame.select("cluster", "hostname").n_unique() if frame.height else 0})


def _downtime(step: Step, cluster: ClusterConfig) -> pl.DataFrame:
    kube = cluster.kubernetes
    assert kube is not None
    return stg_kube__node_downtime(
        step.read(RAW_KUBE_NODE_RUNS, cluster=cluster.name),
        step.start,
        step.end,
        kube_step_seconds(cluster),
        condition_metric=kube.node_metric_names.node_condition,
        unschedulable_metric=kube.node_metric_names.node_unschedulable,
    )


@table_asset(
    STG_KUBE__NODE_DOWNTIME,
    reads=[RAW_KUBE_NODE_RUNS],
    kinds=["polars"],
    description="Downtime intervals of Kubernetes nodes (DOWNTIME_INTERVAL): not Ready "
    "(kube_node_status_condition) or cordoned (kube_node_spec_unschedulable), clipped to the day.",
)
def stg_kube__node_downtime_asset(step: Step) -> Built:
    parts = [_downtime(step, cluster) for cluster in step.clusters_with(SOURCE)]
    frame = pl.concat(parts) if parts else pl.DataFrame(schema=DOWNTIME_SCHEMA)
    seconds = (frame["end_ts"] - frame["start_ts"]).dt.total_seconds().sum() if frame.height else 0
    return Built(frame, metadata={"intervals": frame.height, "node_down_hours": round(float(seconds) / 3600, 3)})
