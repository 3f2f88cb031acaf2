"""Kubernetes marts: inference Deployments rolled up per month (docs/marts.md)."""

import polars as pl
from dagster import AssetDep, AssetExecutionContext, MaterializeResult, asset

from pipelines.assets.marts import JOB_USAGE_KEY, KUBE_DEPS
from pipelines.partitions import monthly_partitions, naive_window
from pipelines.resources import CardhoursResource
from transforms.mart_deployment_monthly import SCHEMA, mart_deployment_monthly
from warehouse import read_frame, replace_partition

DEPLOYMENT_KEY = ["marts", "mart_deployment_monthly"]
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
        frame = (mart_deployment_monthly(usage, jobs, pods, start, end) if usage.height
                 else pl.DataFrame(schema=SCHEMA))
        rows = replace_partition(conn, "marts.mart_deployment_monthly", frame, {"month": month})
    return MaterializeResult(metadata={
        "rows": rows, "month": str(month), "gpu_hours": float(frame["gpu_hours"].sum() or 0.0),
        "replica_pods": int(frame["replica_pods"].sum() or 0),
    })
