"""Kubernetes GPU pods: the daily landing of kube-state-metrics / Kueue / Volcano series,
and the monthly staged pods and jobs (docs/kubernetes.md). Clusters without a
``[clusters.kubernetes]`` section are skipped."""

from datetime import datetime, timedelta

import polars as pl
from dagster import AssetCheckSpec, AssetDep, AssetExecutionContext, MaterializeResult, MetadataValue, asset

from cardhours.config.cluster import ClusterConfig
from cardhours.schemas import QUARANTINE_SCHEMA
from cardhours.sources.kube.landing import SOURCE, land
from cardhours.sources.kube.reader import KubeReader
from pipelines.assets.gate import GATE_DEP
from pipelines.checks.gx_adapter import run_suite_on_frame
from pipelines.checks.kube_suites import (
    node_gpus,
    staged_kube_jobs_frame,
    staged_kube_jobs_suite,
    staged_pods_frame,
    staged_pods_suite,
)
from pipelines.checks.suites import node_gpu_capacity
from pipelines.landing import failure_recorded, landed
from pipelines.partitions import daily_partitions, monthly_partitions, naive_window
from pipelines.resources import CardhoursResource
from transforms.stg_kube__jobs import stg_kube__jobs
from transforms.stg_kube__pods import stg_kube__pods
from warehouse import replace_partition
from warehouse.connection import read_frame

SERIES_KEY = ["raw", "kube_series"]
PODS_KEY = ["staging", "stg_kube__pods"]
JOBS_KEY = ["staging", "stg_kube__jobs"]
PODS_CHECK = "gx_stg_kube__pods"
JOBS_CHECK = "gx_stg_kube__jobs"


def kube_step_seconds(cluster: ClusterConfig) -> int:
    """The kube-state-metrics sample step: kubernetes.step_seconds, else the cluster's sample step."""
    assert cluster.kubernetes is not None
    return cluster.kubernetes.step_seconds or cluster.sample_step_seconds


@asset(
    key=SERIES_KEY,
    partitions_def=daily_partitions,
    group_name="ingest",
    kinds={"duckdb"},
    description="kube-state-metrics / Volcano series of the day, one row per series (raw.kube_series); "
    "Kueue ClusterQueue samples (raw.kube_queue_samples).",
)
def raw_kube_series(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    day = start.date()
    rows: dict[str, int] = {}
    queue_rows: dict[str, int] = {}
    quarantined: dict[str, int] = {}
    with cardhours.warehouse() as conn:
        for cluster in cardhours.config.clusters:
            if cluster.kubernetes is None:
                continue
            with failure_recorded(conn, cluster.name, day, SOURCE):
                reader = KubeReader(cluster)
                try:
                    landing = land(reader.read(start, end), cluster.kubernetes, cluster.name, day)
                finally:
                    reader.close()
                partition = {"cluster": cluster.name, "day": day}
                queue_rows[cluster.name] = replace_partition(
                    conn, "raw.kube_queue_samples", landing.queue_samples, partition
                )
                quarantined[cluster.name] = replace_partition(
                    conn,
                    "raw.quarantine",
                    landing.quarantine.select(list(QUARANTINE_SCHEMA)),
                    {"cluster": cluster.name, "source": SOURCE, "partition_key": day.isoformat()},
                )
                series, bad = landing.series.height, landing.quarantine.height
                rows[cluster.name] = replace_partition(
                    conn,
                    "raw.kube_series",
                    landing.series,
                    partition,
                    also=[landed(cluster.name, day, SOURCE, series, bad, series + bad)],
                )
            if quarantined[cluster.name]:
                context.log.warning(f"{cluster.name}: {quarantined[cluster.name]} pod series quarantined")
    return MaterializeResult(
        metadata={
            "rows": sum(rows.values()),
            "rows_by_cluster": rows,
            "queue_samples": sum(queue_rows.values()),
            "quarantined_series": sum(quarantined.values()),
            "window_start": str(start),
            "window_end": str(end),
        }
    )


def _month_pods(
    cardhours: CardhoursResource, conn, start: datetime, end: datetime
) -> tuple[pl.DataFrame, pl.DataFrame]:
    pods, rejects = [], []
    weights = dict(cardhours.config.rates.mig_profile_weights)
    namespaces = cardhours.config.namespaces_frame()
    capacity = node_gpus(cardhours.config.inventory_frame())
    for cluster in cardhours.config.clusters:
        kube = cluster.kubernetes
        if kube is None:
            continue
        raw = read_frame(
            conn,
            "SELECT * FROM raw.kube_series WHERE cluster = ? AND day >= ? AND day < ?",
            [cluster.name, start.date(), end.date()],
        )
        if raw.is_empty():
            continue
        data_end = min(end, datetime.combine(raw["day"].max(), datetime.min.time()) + timedelta(days=1))
        staged, bad = stg_kube__pods(
            raw,
            namespaces,
            window_start=start,
            window_end=end,
            data_end=data_end,
            step_seconds=kube_step_seconds(cluster),
            department_labels=kube.department_labels,
            queue_label=kube.queue_label,
            gpu_resource=kube.gpu_resource,
            mig_resource_prefix=kube.mig_resource_prefix,
            mig_weights=weights,
            metrics=kube.metric_names.model_dump(),
            node_gpus=capacity,
        )
        pods.append(staged)
        rejects.append(bad)
    if not pods:
        from transforms.stg_kube__pods import SCHEMA

        return pl.DataFrame(schema=SCHEMA), pl.DataFrame(schema=QUARANTINE_SCHEMA)
    return pl.concat(pods), pl.concat(rejects)


@asset(
    key=PODS_KEY,
    partitions_def=monthly_partitions,
    group_name="staging",
    kinds={"duckdb", "polars"},
    deps=[AssetDep(SERIES_KEY), GATE_DEP],
    check_specs=[AssetCheckSpec(PODS_CHECK, asset=PODS_KEY, blocking=True)],
    description="One row per GPU pod overlapping the month: times, GPUs (MIG as fractions), department.",
)
def stg_kube__pods_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    month = start.date()
    with cardhours.warehouse() as conn:
        pods, rejects = _month_pods(cardhours, conn, start, end)
        rows = replace_partition(
            conn, "staging.stg_kube__pods", pods.with_columns(pl.lit(month).alias("month")), {"month": month}
        )
        rejects = rejects.with_columns(pl.lit(month.isoformat()).alias("partition_key"))
        quarantined = replace_partition(
            conn,
            "raw.quarantine",
            rejects.select(list(QUARANTINE_SCHEMA)),
            {"source": "stg_kube__pods", "partition_key": month.isoformat()},
        )
    by_source = dict(pods.group_by("department_source").len().iter_rows()) if pods.height else {}
    checked = staged_pods_frame(pods, cardhours.config.inventory_frame())
    check = run_suite_on_frame(staged_pods_suite(), checked, PODS_KEY, PODS_CHECK)
    return MaterializeResult(
        metadata={
            "rows": rows,
            "quarantined_pods": quarantined,
            "month": str(month),
            "department_sources": MetadataValue.json(by_source),
            "gpu_hours": round(float(pods["gpu_seconds"].sum()) / 3600, 3) if pods.height else 0.0,
        },
        check_results=[check],
    )


@asset(
    key=JOBS_KEY,
    partitions_def=monthly_partitions,
    group_name="staging",
    kinds={"duckdb", "polars"},
    deps=[AssetDep(PODS_KEY)],
    check_specs=[AssetCheckSpec(JOBS_CHECK, asset=JOBS_KEY, blocking=True)],
    description="Kubernetes jobs: bare or replica pods, or the owner (Job, PyTorchJob, PodGroup...) of several.",
)
def stg_kube__jobs_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, _ = naive_window(context.partition_time_window)
    month = start.date()
    with cardhours.warehouse() as conn:
        pods = read_frame(conn, "SELECT * EXCLUDE (month) FROM staging.stg_kube__pods WHERE month = ?", [month])
        jobs = stg_kube__jobs(pods)
        rows = replace_partition(
            conn, "staging.stg_kube__jobs", jobs.with_columns(pl.lit(month).alias("month")), {"month": month}
        )
    checked = staged_kube_jobs_frame(jobs, node_gpu_capacity(cardhours.config.inventory_frame()))
    check = run_suite_on_frame(staged_kube_jobs_suite(), checked, JOBS_KEY, JOBS_CHECK)
    return MaterializeResult(
        metadata={
            "rows": rows,
            "pods": pods.height,
            "month": str(month),
            "gang_jobs": int(jobs.filter(pl.col("n_pods") > 1).height) if jobs.height else 0,
        },
        check_results=[check],
    )
