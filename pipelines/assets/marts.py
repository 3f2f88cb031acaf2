"""Monthly marts: per-job usage, per-department and per-cluster card-hours."""

import polars as pl
from dagster import AssetCheckSpec, AssetDep, AssetExecutionContext, MaterializeResult, MetadataValue, asset

from pipelines.assets.intermediate import ATTRIBUTED_KEY, read_attributed
from pipelines.checks.marts import (
    CAPACITY_BALANCE,
    MATCHES_JOB_USAGE,
    WITHIN_CAPACITY,
    allocation_within_capacity_check,
    capacity_balance_check,
    matches_job_usage_check,
)
from pipelines.partitions import monthly_partitions, naive_window
from pipelines.resources import CardhoursResource
from transforms.fct_gpu_hourly import fct_gpu_hourly
from transforms.fct_job_usage import fct_job_usage
from transforms.mart_cluster_monthly import capacity_gpu_hours, mart_cluster_monthly
from transforms.mart_department_monthly import mart_department_monthly
from warehouse import read_frame, replace_partition

JOB_USAGE_KEY = ["marts", "fct_job_usage"]
DEPARTMENT_KEY = ["marts", "mart_department_monthly"]
CLUSTER_KEY = ["marts", "mart_cluster_monthly"]
GPU_HOURLY_KEY = ["marts", "fct_gpu_hourly"]
SAMPLE_DEPS = [AssetDep(["staging", "stg_slurm__jobs"]), AssetDep(ATTRIBUTED_KEY)]
KUBE_DEPS = [AssetDep(["staging", "stg_kube__jobs"]), AssetDep(["staging", "stg_kube__pods"])]
JOBS_SQL = "SELECT * EXCLUDE (month) FROM staging.stg_slurm__jobs WHERE month = ? AND cluster = ?"
KUBE_JOBS_SQL = "SELECT * EXCLUDE (month) FROM staging.stg_kube__jobs WHERE month = ? AND cluster = ? ORDER BY job_id"
KUBE_PODS_SQL = (
    "SELECT * EXCLUDE (month) FROM staging.stg_kube__pods WHERE month = ? AND cluster = ? "
    "ORDER BY namespace, pod, pod_uid"
)


def divisions_frame(config) -> pl.DataFrame:
    """department -> division of ``[org.departments]`` (Kubernetes departments come from labels)."""
    departments = config.org.departments
    return pl.DataFrame(
        {"department": list(departments), "division": [d.division for d in departments.values()]},
        schema={"department": pl.String, "division": pl.String},
    )


def kube_frames(conn, cluster, month) -> dict:
    """fct_job_usage's Kubernetes arguments for a cluster with a ``[clusters.kubernetes]`` section."""
    if cluster.kubernetes is None:
        return {}
    return {
        "kube_jobs": read_frame(conn, KUBE_JOBS_SQL, [month, cluster.name]),
        "kube_pods": read_frame(conn, KUBE_PODS_SQL, [month, cluster.name]),
    }


@asset(
    key=JOB_USAGE_KEY,
    partitions_def=monthly_partitions,
    group_name="marts",
    kinds={"duckdb", "polars"},
    deps=SAMPLE_DEPS + KUBE_DEPS,
    description="One row per job run (Slurm) or Kubernetes job: GPU-hours inside the month, utilization, idle, "
    "energy, queue time, attribution.",
)
def fct_job_usage_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    config = cardhours.config
    inventory = config.inventory_frame()
    frames = []
    with cardhours.warehouse() as conn:
        for cluster in config.clusters:
            jobs = read_frame(conn, JOBS_SQL, [start.date(), cluster.name])
            frames.append(
                fct_job_usage(
                    jobs=jobs,
                    attributed=read_attributed(conn, start.date(), cluster.name),
                    accounts=config.accounts_frame(),
                    gpu_models=inventory.select("cluster", "hostname", "gpu_model").unique(),
                    period_start=start,
                    period_end=end,
                    step_seconds=cluster.sample_step_seconds,
                    divisions=divisions_frame(config),
                    **kube_frames(conn, cluster, start.date()),
                )
            )
        usage = pl.concat(frames)
        rows = replace_partition(conn, "marts.fct_job_usage", usage, {"month": start.date()})
    no_samples = usage.filter(pl.col("start_time").is_not_null() & (pl.col("n_samples").fill_null(0) == 0)).height
    methods = usage.get_column("attribution_method").value_counts().rows()
    return MaterializeResult(
        metadata={
            "rows": rows,
            "gpu_hours": float(usage["gpu_hours"].sum() or 0),
            "jobs_without_samples": no_samples,
            "attribution_methods": MetadataValue.json({str(k): int(v) for k, v in methods}),
            "jobs_by_scheduler": MetadataValue.json(
                {str(k): int(v) for k, v in usage.get_column("scheduler").value_counts().rows()}
            ),
            "month": str(start.date()),
        }
    )


@asset(
    key=GPU_HOURLY_KEY,
    partitions_def=monthly_partitions,
    group_name="marts",
    kinds={"duckdb", "polars"},
    deps=SAMPLE_DEPS + KUBE_DEPS,
    description="Per GPU or MIG instance and hour: capacity, allocated and active seconds, samples, "
    "unattributed samples, coverage.",
    check_specs=[AssetCheckSpec(WITHIN_CAPACITY, asset=GPU_HOURLY_KEY, blocking=True)],
)
def fct_gpu_hourly_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    inventory = cardhours.config.inventory_frame()
    frames = []
    with cardhours.warehouse() as conn:
        for cluster in cardhours.config.clusters:
            jobs = read_frame(conn, JOBS_SQL, [start.date(), cluster.name])
            attributed = read_attributed(conn, start.date(), cluster.name)
            cluster_inventory = inventory.filter(pl.col("cluster") == cluster.name)
            pods = read_frame(conn, KUBE_PODS_SQL, [start.date(), cluster.name]) if cluster.kubernetes else None
            frames.append(
                fct_gpu_hourly(cluster_inventory, jobs, attributed, start, end, cluster.sample_step_seconds, pods)
            )
            unknown = (
                jobs.select(pl.col("hosts").explode())
                .drop_nulls()
                .filter(~pl.col("hosts").is_in(cluster_inventory.get_column("hostname").implode()))
            )
            if unknown.height:
                context.log.warning(
                    f"{cluster.name}: hosts of runs not in the inventory: "
                    f"{unknown.unique().head(10).to_series().to_list()}"
                )
            if pods is not None:
                nodes = pods.select(pl.col("node").drop_nulls().unique()).filter(
                    ~pl.col("node").is_in(cluster_inventory.get_column("hostname").implode())
                )
                if nodes.height:
                    context.log.warning(
                        f"{cluster.name}: nodes of pods not in the inventory: {nodes.head(10).to_series().to_list()}"
                    )
        hourly = pl.concat(frames)
        rows = replace_partition(conn, "marts.fct_gpu_hourly", hourly, {"month": start.date()})
    return MaterializeResult(
        metadata={
            "rows": rows,
            "month": str(start.date()),
            "allocated_gpu_hours": float(hourly.get_column("allocated_seconds").sum() / 3600),
            "unattributed_samples": int(hourly.get_column("unattributed_samples").sum()),
            "host_spread_hours": int(hourly.filter(pl.col("allocation_basis") == "host_spread").height),
        },
        check_results=[allocation_within_capacity_check(hourly, GPU_HOURLY_KEY)],
    )


@asset(
    key=DEPARTMENT_KEY,
    partitions_def=monthly_partitions,
    group_name="marts",
    kinds={"duckdb", "polars"},
    deps=[AssetDep(JOB_USAGE_KEY)],
    check_specs=[
        AssetCheckSpec(CAPACITY_BALANCE, asset=DEPARTMENT_KEY, blocking=True),
        AssetCheckSpec(MATCHES_JOB_USAGE, asset=DEPARTMENT_KEY, blocking=True),
    ],
    description="Per cluster, division and department: card-hours, utilization, idle waste, queue time, "
    "preemption; plus each cluster's unallocated capacity.",
)
def mart_department_monthly_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    capacity = capacity_gpu_hours(cardhours.config.inventory_frame(), start, end)
    with cardhours.warehouse() as conn:
        usage = read_frame(conn, "SELECT * FROM marts.fct_job_usage WHERE month = ?", [start.date()])
        departments = mart_department_monthly(usage, period_start=start, capacity_gpu_hours=capacity)
        rows = replace_partition(conn, "marts.mart_department_monthly", departments, {"month": start.date()})
    checks = [
        capacity_balance_check(departments, capacity, start.date(), DEPARTMENT_KEY),
        matches_job_usage_check(departments, usage, start.date(), DEPARTMENT_KEY),
    ]
    return MaterializeResult(metadata={"rows": rows, "month": str(start.date())}, check_results=checks)


@asset(
    key=CLUSTER_KEY,
    partitions_def=monthly_partitions,
    group_name="marts",
    kinds={"duckdb", "polars"},
    deps=[AssetDep(JOB_USAGE_KEY)],
    description="Per cluster: capacity, allocated, active and idle GPU-hours, coverage, queue time.",
)
def mart_cluster_monthly_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    capacity = capacity_gpu_hours(cardhours.config.inventory_frame(), start, end)
    with cardhours.warehouse() as conn:
        usage = read_frame(conn, "SELECT * FROM marts.fct_job_usage WHERE month = ?", [start.date()])
        clusters = mart_cluster_monthly(usage, capacity, start.date())
        rows = replace_partition(conn, "marts.mart_cluster_monthly", clusters, {"month": start.date()})
    headline = clusters.row(0, named=True) if clusters.height == 1 else {}
    return MaterializeResult(
        metadata={
            "rows": rows,
            "month": str(start.date()),
            "allocation_ratio": float(headline.get("allocation_ratio") or 0.0),
            "utilization": float(headline.get("utilization") or 0.0),
        }
    )
