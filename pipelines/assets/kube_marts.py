"""Kubernetes marts: inference Deployments and Kueue / Volcano queues per month (docs/marts.md)."""

import polars as pl

from contracts.sources import KUBE
from pipelines.step import Step
from pipelines.table_asset import Built, table_asset
from pipelines.tables import (
    FCT_JOB_USAGE,
    MART_DEPLOYMENT_MONTHLY,
    MART_KUBE_QUEUE_MONTHLY,
    MONTH_LANDED,
    RAW_KUBE_QUEUE_SAMPLES,
    STG_KUBE__JOBS,
    STG_KUBE__PODS,
)
from transforms.marts.mart_deployment_monthly import SCHEMA, mart_deployment_monthly
from transforms.marts.mart_kube_queue_monthly import SCHEMA as QUEUE_SCHEMA
from transforms.marts.mart_kube_queue_monthly import mart_kube_queue_monthly

KUEUE_NAMES = ("admission_wait", "pending_workloads", "resource_usage", "nominal_quota")


@table_asset(
    MART_DEPLOYMENT_MONTHLY,
    reads=[FCT_JOB_USAGE, STG_KUBE__JOBS, STG_KUBE__PODS],
    kinds=["polars"],
    description="Per Kubernetes Deployment and month: replica pods, replica-hours, peak replicas, GPU-hours, "
    "utilization.",
)
def mart_deployment_monthly_asset(step: Step) -> Built:
    usage = step.read(FCT_JOB_USAGE, where="scheduler = 'kubernetes'", order_by="cluster, job_id")
    jobs = step.read(STG_KUBE__JOBS, order_by="cluster, job_id")
    pods = step.read(STG_KUBE__PODS, order_by="cluster, namespace, pod, pod_uid")
    empty = pl.DataFrame(schema=SCHEMA)
    frame = mart_deployment_monthly(usage, jobs, pods, step.start, step.end) if usage.height else empty
    return Built(
        frame,
        metadata={
            "gpu_hours": float(frame["gpu_hours"].sum() or 0.0),
            "replica_pods": int(frame["replica_pods"].sum() or 0),
        },
    )


def _queues(step: Step, cluster) -> tuple[pl.DataFrame, int]:
    """One cluster's queues of the month, and its samples without a queue label (left out)."""
    kube = cluster.kubernetes
    samples = step.read(
        RAW_KUBE_QUEUE_SAMPLES,
        cluster=cluster.name,
        where="ts >= ? AND ts < ?",
        params=[step.start, step.end],
        order_by="metric, labels, ts",
    )
    step_seconds = kube.step_seconds or cluster.sample_step_seconds
    names = {name: getattr(kube.kueue, name) for name in KUEUE_NAMES}
    frame = mart_kube_queue_monthly(samples, step.month, step_seconds, names, kube.volcano.job_scheduling_duration)
    return frame, samples.filter(pl.col("queue").is_null()).height


@table_asset(
    MART_KUBE_QUEUE_MONTHLY,
    reads=[RAW_KUBE_QUEUE_SAMPLES],
    after=[MONTH_LANDED],
    kinds=["polars"],
    description="Per cluster, Kueue ClusterQueue or Volcano queue and month: admission wait p50/p95, admitted "
    "workloads, pending workloads, GPU usage vs nominal quota and borrowing, Volcano scheduling duration.",
)
def mart_kube_queue_monthly_asset(step: Step) -> Built:
    queued = [c for c in step.clusters_with(KUBE) if c.kubernetes.kueue.enabled or c.kubernetes.volcano.enabled]
    built = [_queues(step, cluster) for cluster in queued]
    frame = pl.concat([frame for frame, _ in built]) if built else pl.DataFrame(schema=QUEUE_SCHEMA)
    unnamed = sum(count for _, count in built)
    if unnamed:
        step.log.warning(f"{unnamed} queue samples without a cluster_queue or queue label left out")
    return Built(
        frame,
        metadata={
            "queues": frame.height,
            "samples_without_queue": unnamed,
            "admitted_workloads": int(frame["admitted_workloads"].sum() or 0),
        },
    )
