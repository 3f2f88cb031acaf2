"""Kubernetes marts: inference Deployments and Kueue / Volcano queues per month (docs/marts.md)."""

import polars as pl
from dagster import AssetDep, AssetExecutionContext, MaterializeResult, asset

from pipelines.assets.gate import GATE_DEP
from pipelines.assets.marts import JOB_USAGE_KEY, KUBE_DEPS
from pipelines.partitions import monthly_partitions, naive_window
from pipelines.resources import CardhoursResource
from transforms.mart_deployment_monthly import SCHEMA, mart_deployment_monthly
from transforms.mart_kube_queue_monthly import SCHEMA as QUEUE_SCHEMA
from transforms.mart_kube_queue_monthly import mart_kube_queue_monthly
from warehouse import read_frame, replace_partition

DEPLOYMENT_KEY = ["marts", "mart_deployment_monthly"]
QUEUE_KEY = ["marts", "mart_kube_queue_monthly"]
QUEUE_SAMPLES_SQL = (
    "SELECT * FROM raw.kube_queue_samples WHERE cluster = ? AND day >= ? AND day < ? AND ts >= ? AND ts < ? "
    "ORDER BY metric, labels, ts"
)
USAGE_SQL = "SELECT * FROM marts.fct_job_usage WHERE month = ? AND scheduler = 'kubernetes' ORDER BY cluster, job_id"
JOBS_SQL = "SELECT * FROM staging.stg_kube__jobs WHERE month = ? ORDER BY cluster, job_id"
PODS_SQL = "SELECT * FROM staging.stg_kube__pods WHERE month = ? ORDER BY cluster, namespace, pod, pod_uid"


@asset(
    key=DEPLOYMENT_KEY,
    partitions_def=monthly_partitions,
    group_name="marts",
    kinds={"duckdb", "polars"},
    deps=[AssetDep(JOB_USAGE_KEY), *KUBE_DEPS],
    description="Per Kubernetes Deployment and month: replica pods, replica-hours, peak replicas, GPU-hours, "
    "utilization.",
)
def mart_deployment_monthly_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    month = start.date()
    with cardhours.warehouse() as conn:
        usage = read_frame(conn, USAGE_SQL, [month])
        jobs = read_frame(conn, JOBS_SQL, [month])
        pods = read_frame(conn, PODS_SQL, [month])
        frame = mart_deployment_monthly(usage, jobs, pods, start, end) if usage.height else pl.DataFrame(schema=SCHEMA)
        rows = replace_partition(conn, "marts.mart_deployment_monthly", frame, {"month": month})
    return MaterializeResult(
        metadata={
            "rows": rows,
            "month": str(month),
            "gpu_hours": float(frame["gpu_hours"].sum() or 0.0),
            "replica_pods": int(frame["replica_pods"].sum() or 0),
        }
    )


@asset(
    key=QUEUE_KEY,
    partitions_def=monthly_partitions,
    group_name="marts",
    kinds={"duckdb", "polars"},
    deps=[AssetDep(["raw", "kube_series"]), GATE_DEP],
    description="Per cluster, Kueue ClusterQueue or Volcano queue and month: admission wait p50/p95, admitted "
    "workloads, pending workloads, GPU usage vs nominal quota and borrowing, Volcano scheduling duration.",
)
def mart_kube_queue_monthly_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    month = start.date()
    frames, unnamed = [], 0
    with cardhours.warehouse() as conn:
        for cluster in cardhours.config.clusters:
            kube = cluster.kubernetes
            if kube is None or not (kube.kueue.enabled or kube.volcano.enabled):
                continue
            samples = read_frame(conn, QUEUE_SAMPLES_SQL, [cluster.name, month, end.date(), start, end])
            unnamed += samples.filter(pl.col("queue").is_null()).height
            step = kube.step_seconds or cluster.sample_step_seconds
            names = {
                k: getattr(kube.kueue, k)
                for k in ("admission_wait", "pending_workloads", "resource_usage", "nominal_quota")
            }
            frames.append(mart_kube_queue_monthly(samples, month, step, names, kube.volcano.job_scheduling_duration))
        frame = pl.concat(frames) if frames else pl.DataFrame(schema=QUEUE_SCHEMA)
        rows = replace_partition(conn, "marts.mart_kube_queue_monthly", frame, {"month": month})
    if unnamed:
        context.log.warning(f"{unnamed} queue samples without a cluster_queue or queue label left out")
    return MaterializeResult(
        metadata={
            "rows": rows,
            "month": str(month),
            "queues": frame.height,
            "samples_without_queue": unnamed,
            "admitted_workloads": int(frame["admitted_workloads"].sum() or 0),
        }
    )
