"""Monthly marts: per-job usage, per-department and per-cluster card-hours."""

import polars as pl
from dagster import MetadataValue

from contracts.sources import KUBE
from pipelines.assets.intermediate import read_attributed
from pipelines.checks.marts import (
    CAPACITY_BALANCE,
    MATCHES_JOB_USAGE,
    WITHIN_CAPACITY,
    allocation_within_capacity_check,
    capacity_balance_check,
    matches_job_usage_check,
)
from pipelines.step import Step
from pipelines.table_asset import Built, Check, table_asset
from pipelines.tables import (
    FCT_GPU_HOURLY,
    FCT_JOB_USAGE,
    INT_GPU_INVENTORY_OBSERVED,
    INT_GPU_MINUTES_ATTRIBUTED,
    MART_CLUSTER_MONTHLY,
    MART_DEPARTMENT_MONTHLY,
    STG_KUBE__JOBS,
    STG_KUBE__PODS,
    STG_SLURM__JOBS,
)
from transforms.marts.fct_gpu_hourly import fct_gpu_hourly
from transforms.marts.fct_job_usage import fct_job_usage
from transforms.marts.mart_cluster_monthly import capacity_gpu_hours, mart_cluster_monthly
from transforms.marts.mart_department_monthly import mart_department_monthly
from warehouse.books.inventory import capacity_inventory

POD_ORDER = "namespace, pod, pod_uid"


def divisions_frame(config) -> pl.DataFrame:
    """department -> division of ``[org.departments]`` (Kubernetes departments come from labels)."""
    departments = config.org.departments
    return pl.DataFrame(
        {"department": list(departments), "division": [d.division for d in departments.values()]},
        schema={"department": pl.String, "division": pl.String},
    )


def kube_frames(step: Step, cluster) -> dict:
    """fct_job_usage's Kubernetes arguments for a cluster with a ``[clusters.kubernetes]`` section."""
    if KUBE not in cluster.sources:
        return {}
    return {
        "kube_jobs": step.read(STG_KUBE__JOBS, cluster=cluster.name, with_period=False, order_by="job_id"),
        "kube_pods": step.read(STG_KUBE__PODS, cluster=cluster.name, with_period=False, order_by=POD_ORDER),
    }


@table_asset(
    FCT_JOB_USAGE,
    reads=[STG_SLURM__JOBS, INT_GPU_MINUTES_ATTRIBUTED, STG_KUBE__JOBS, STG_KUBE__PODS],
    kinds=["polars"],
    description="One row per job run (Slurm) or Kubernetes job: GPU-hours inside the month, utilization, idle, "
    "energy, queue time, attribution.",
)
def fct_job_usage_asset(step: Step) -> Built:
    config, inventory = step.config, step.config.inventory_frame()
    usage = pl.concat(
        step.each_cluster(
            lambda cluster: fct_job_usage(
                jobs=step.read(STG_SLURM__JOBS, cluster=cluster.name, with_period=False),
                attributed=read_attributed(step.store, step.month, cluster.name),
                accounts=config.accounts_frame(),
                gpu_models=inventory.select("cluster", "hostname", "gpu_model").unique(),
                period_start=step.start,
                period_end=step.end,
                step_seconds=cluster.sample_step_seconds,
                divisions=divisions_frame(config),
                **kube_frames(step, cluster),
            )
        )
    )
    no_samples = usage.filter(pl.col("start_time").is_not_null() & (pl.col("n_samples").fill_null(0) == 0)).height
    methods = usage.get_column("attribution_method").value_counts().rows()
    schedulers = usage.get_column("scheduler").value_counts().rows()
    return Built(
        usage,
        metadata={
            "gpu_hours": float(usage["gpu_hours"].sum() or 0),
            "jobs_without_samples": no_samples,
            "attribution_methods": MetadataValue.json({str(k): int(v) for k, v in methods}),
            "jobs_by_scheduler": MetadataValue.json({str(k): int(v) for k, v in schedulers}),
        },
    )


def _warn_unknown_hosts(step: Step, cluster, jobs: pl.DataFrame, pods: pl.DataFrame | None, hosts: pl.Series) -> None:
    """Log the hosts of runs and the nodes of pods that the inventory does not list."""
    unknown = jobs.select(pl.col("hosts").explode()).drop_nulls().filter(~pl.col("hosts").is_in(hosts.implode()))
    if unknown.height:
        step.log.warning(
            f"{cluster.name}: hosts of runs not in the inventory: {unknown.unique().head(10).to_series().to_list()}"
        )
    if pods is not None:
        nodes = pods.select(pl.col("node").drop_nulls().unique()).filter(~pl.col("node").is_in(hosts.implode()))
        if nodes.height:
            step.log.warning(
                f"{cluster.name}: nodes of pods not in the inventory: {nodes.head(10).to_series().to_list()}"
            )


@table_asset(
    FCT_GPU_HOURLY,
    reads=[STG_SLURM__JOBS, INT_GPU_MINUTES_ATTRIBUTED, STG_KUBE__PODS, INT_GPU_INVENTORY_OBSERVED],
    kinds=["polars"],
    checks=[Check(WITHIN_CAPACITY)],
    description="Per GPU or MIG instance and hour: capacity, allocated and active seconds, samples, "
    "unattributed samples, coverage.",
)
def fct_gpu_hourly_asset(step: Step) -> Built:
    inventory = capacity_inventory(step.store.conn, step.config, step.start, step.end)

    def hourly(cluster) -> pl.DataFrame:
        jobs = step.read(STG_SLURM__JOBS, cluster=cluster.name, with_period=False)
        attributed = read_attributed(step.store, step.month, cluster.name)
        cluster_inventory = inventory.filter(pl.col("cluster") == cluster.name)
        pods = None
        if KUBE in cluster.sources:
            pods = step.read(STG_KUBE__PODS, cluster=cluster.name, with_period=False, order_by=POD_ORDER)
        _warn_unknown_hosts(step, cluster, jobs, pods, cluster_inventory.get_column("hostname").unique())
        return fct_gpu_hourly(
            cluster_inventory, jobs, attributed, step.start, step.end, cluster.sample_step_seconds, pods
        )

    frame = pl.concat(step.each_cluster(hourly))
    return Built(
        frame,
        metadata={
            "allocated_gpu_hours": float(frame.get_column("allocated_seconds").sum() / 3600),
            "unattributed_samples": int(frame.get_column("unattributed_samples").sum()),
            "host_spread_hours": int(frame.filter(pl.col("allocation_basis") == "host_spread").height),
        },
        checks=[allocation_within_capacity_check(frame, step.key)],
    )


@table_asset(
    MART_DEPARTMENT_MONTHLY,
    reads=[FCT_JOB_USAGE, INT_GPU_INVENTORY_OBSERVED],
    kinds=["polars"],
    checks=[Check(CAPACITY_BALANCE), Check(MATCHES_JOB_USAGE)],
    description="Per cluster, division and department: card-hours, utilization, idle waste, queue time, "
    "preemption; plus each cluster's unallocated capacity.",
)
def mart_department_monthly_asset(step: Step) -> Built:
    capacity = capacity_gpu_hours(
        capacity_inventory(step.store.conn, step.config, step.start, step.end), step.start, step.end
    )
    usage = step.read(FCT_JOB_USAGE)
    departments = mart_department_monthly(usage, period_start=step.start, capacity_gpu_hours=capacity)
    checks = [
        capacity_balance_check(departments, capacity, step.month, step.key),
        matches_job_usage_check(departments, usage, step.month, step.key),
    ]
    return Built(departments, checks=checks)


_DEVICE_ACTIVITY_SQL = """
SELECT a.cluster, a.best_sum, a.best_n, h.n_samples, h.expected_samples
FROM (SELECT cluster, sum(best_sum) AS best_sum, sum(best_n) AS best_n FROM intermediate.int_gpu_minutes_attributed
      WHERE month = ? AND list_contains(?, cluster) GROUP BY cluster) a
JOIN (SELECT cluster, sum(n_samples) AS n_samples, sum(expected_samples) AS expected_samples FROM marts.fct_gpu_hourly
      WHERE month = ? AND list_contains(?, cluster) GROUP BY cluster) h USING (cluster)
"""


def device_activity(step: Step) -> pl.DataFrame | None:
    """The samples of the clusters without a scheduler (metrics only): best-signal sums and
    sample counts, for their utilization and coverage (``mart_cluster_monthly``)."""
    charged = set(step.config.charged_clusters)
    names = [cluster.name for cluster in step.clusters if cluster.name not in charged]
    if not names:
        return None
    return step.sql(_DEVICE_ACTIVITY_SQL, [step.month, names, step.month, names])


@table_asset(
    MART_CLUSTER_MONTHLY,
    reads=[FCT_JOB_USAGE, INT_GPU_INVENTORY_OBSERVED, INT_GPU_MINUTES_ATTRIBUTED, FCT_GPU_HOURLY],
    kinds=["polars"],
    description="Per cluster: capacity, allocated, active and idle GPU-hours, coverage, queue time; a "
    "metrics-only cluster's utilization and coverage from its GPUs' samples.",
)
def mart_cluster_monthly_asset(step: Step) -> Built:
    capacity = capacity_gpu_hours(
        capacity_inventory(step.store.conn, step.config, step.start, step.end), step.start, step.end
    )
    clusters = mart_cluster_monthly(step.read(FCT_JOB_USAGE), capacity, step.month, device_activity(step))
    headline = clusters.row(0, named=True) if clusters.height == 1 else {}
    return Built(
        clusters,
        metadata={
            "allocation_ratio": float(headline.get("allocation_ratio") or 0.0),
            "utilization": float(headline.get("utilization") or 0.0),
        },
    )
