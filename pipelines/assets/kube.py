"""Kubernetes GPU pods: the daily landing of kube-state-metrics / Kueue / Volcano series,
and the monthly staged pods and jobs (docs/kubernetes.md), for the clusters with a
``[clusters.kubernetes]`` section (``ClusterConfig.sources``)."""

from datetime import datetime, timedelta

import polars as pl
from dagster import MaterializeResult, MetadataValue

from config.cluster import ClusterConfig
from contracts.schemas import QUARANTINE_SCHEMA
from pipelines.checks.gx_adapter import run_suite_on_frame
from pipelines.checks.kube_suites import (
    node_gpus,
    staged_kube_jobs_frame,
    staged_kube_jobs_suite,
    staged_pods_frame,
    staged_pods_suite,
)
from pipelines.checks.suites import node_gpu_capacity
from pipelines.landing import Gap, empty_day, failure_recorded, gap_metadata, landed, record_gap
from pipelines.shrink_guard import guard_rows
from pipelines.step import Step
from pipelines.table_asset import Built, Check, table_asset
from pipelines.tables import (
    MONTH_LANDED,
    RAW_KUBE_NODE_RUNS,
    RAW_KUBE_QUEUE_SAMPLES,
    RAW_KUBE_SERIES,
    RAW_QUARANTINE,
    RAW_QUARANTINE_MONTHLY,
    STG_KUBE__JOBS,
    STG_KUBE__PODS,
)
from sources.kube.landing import SOURCE, land
from sources.kube.reader import KubeReader
from transforms.staging.stg_kube__jobs import stg_kube__jobs
from transforms.staging.stg_kube__pods import SCHEMA as PODS_SCHEMA
from transforms.staging.stg_kube__pods import stg_kube__pods

PODS_CHECK = "gx_stg_kube__pods"
JOBS_CHECK = "gx_stg_kube__jobs"


def kube_step_seconds(cluster: ClusterConfig) -> int:
    """The kube-state-metrics sample step: kubernetes.step_seconds, else the cluster's sample step."""
    assert cluster.kubernetes is not None
    return cluster.kubernetes.step_seconds or cluster.sample_step_seconds


def _land_cluster(step: Step, cluster: ClusterConfig) -> tuple[int, int, int, int] | Gap:
    """One cluster's day: queue samples, node runs, quarantined series, then the series with the landing;
    a ``Gap`` when the source answered with no series at all."""
    reader = KubeReader(cluster)
    try:
        long = reader.read(step.start, step.end)
        landing = land(long, cluster.kubernetes, cluster.name, step.day, kube_step_seconds(cluster))
    finally:
        reader.close()
    guard_rows(step, RAW_KUBE_SERIES, cluster.name, landing.series)  # before any of the day is replaced
    guard_rows(step, RAW_KUBE_NODE_RUNS, cluster.name, landing.node_runs)
    queue_rows = step.write(landing.queue_samples, table=RAW_KUBE_QUEUE_SAMPLES, cluster=cluster.name)
    node_rows = step.write(landing.node_runs, table=RAW_KUBE_NODE_RUNS, cluster=cluster.name)
    quarantined = step.write(
        landing.quarantine.select(list(QUARANTINE_SCHEMA)),
        table=RAW_QUARANTINE,
        partition={"cluster": cluster.name, "source": SOURCE, "partition_key": step.day.isoformat()},
    )
    series, bad = landing.series.height, landing.quarantine.height
    if series + bad + queue_rows + node_rows == 0:
        step.write(landing.series, cluster=cluster.name)
        return empty_day(step.store, cluster.name, step.day, SOURCE)
    rows = step.write(
        landing.series, cluster=cluster.name, also=[landed(cluster.name, step.day, SOURCE, series, bad, series + bad)]
    )
    return rows, queue_rows, node_rows, quarantined


@table_asset(
    RAW_KUBE_SERIES,
    description="kube-state-metrics / Volcano series of the day, one row per series (raw.kube_series); "
    "Kueue ClusterQueue samples (raw.kube_queue_samples); node series as runs (raw.kube_node_runs).",
)
def raw_kube_series(step: Step) -> MaterializeResult:
    rows: dict[str, int] = {}
    queue_rows: dict[str, int] = {}
    node_rows: dict[str, int] = {}
    quarantined: dict[str, int] = {}
    gaps: list[Gap] = []
    for cluster in step.clusters_with(SOURCE):
        with failure_recorded(step.store, cluster.name, step.day, SOURCE):
            landing = _land_cluster(step, cluster)
        if isinstance(landing, Gap):
            gaps.append(record_gap(step.store, step.log, landing))
            continue
        rows[cluster.name], queue_rows[cluster.name], node_rows[cluster.name], quarantined[cluster.name] = landing
        if quarantined[cluster.name]:
            step.log.warning(f"{cluster.name}: {quarantined[cluster.name]} pod series quarantined")
    return MaterializeResult(
        metadata={
            "rows": sum(rows.values()),
            "rows_by_cluster": rows,
            "queue_samples": sum(queue_rows.values()),
            "node_runs": sum(node_rows.values()),
            "quarantined_series": sum(quarantined.values()),
            **gap_metadata(gaps),
            "window_start": str(step.start),
            "window_end": str(step.end),
        }
    )


def _month_pods(step: Step) -> tuple[pl.DataFrame, pl.DataFrame]:
    pods, rejects = [], []
    start, end = step.start, step.end
    weights = dict(step.config.rates.mig_profile_weights)
    namespaces = step.config.namespaces_frame()
    capacity = node_gpus(step.config.inventory_frame())
    for cluster in step.clusters_with(SOURCE):
        kube = cluster.kubernetes
        raw = step.read(RAW_KUBE_SERIES, cluster=cluster.name)
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
        return pl.DataFrame(schema=PODS_SCHEMA), pl.DataFrame(schema=QUARANTINE_SCHEMA)
    return pl.concat(pods), pl.concat(rejects)


@table_asset(
    STG_KUBE__PODS,
    reads=[RAW_KUBE_SERIES],
    after=[MONTH_LANDED],
    kinds=["polars"],
    checks=[Check(PODS_CHECK)],
    description="One row per GPU pod overlapping the month: times, GPUs (MIG as fractions), department.",
)
def stg_kube__pods_asset(step: Step) -> Built:
    pods, rejects = _month_pods(step)
    month = step.month.isoformat()
    quarantined = step.write(
        rejects.with_columns(pl.lit(month).alias("partition_key")).select(list(QUARANTINE_SCHEMA)),
        table=RAW_QUARANTINE_MONTHLY,
        partition={"source": "stg_kube__pods", "partition_key": month},
    )
    by_source = dict(pods.group_by("department_source").len().iter_rows()) if pods.height else {}
    checked = staged_pods_frame(pods, step.config.inventory_frame())
    return Built(
        pods,
        metadata={
            "quarantined_pods": quarantined,
            "department_sources": MetadataValue.json(by_source),
            "gpu_hours": round(float(pods["gpu_seconds"].sum()) / 3600, 3) if pods.height else 0.0,
        },
        checks=[run_suite_on_frame(staged_pods_suite(), checked, step.key, PODS_CHECK)],
    )


@table_asset(
    STG_KUBE__JOBS,
    reads=[STG_KUBE__PODS],
    kinds=["polars"],
    checks=[Check(JOBS_CHECK)],
    description="Kubernetes jobs: bare or replica pods, or the owner (Job, PyTorchJob, PodGroup...) of several.",
)
def stg_kube__jobs_asset(step: Step) -> Built:
    pods = step.read(STG_KUBE__PODS, with_period=False)
    jobs = stg_kube__jobs(pods)
    checked = staged_kube_jobs_frame(jobs, node_gpu_capacity(step.config.inventory_frame()))
    return Built(
        jobs,
        metadata={
            "pods": pods.height,
            "gang_jobs": int(jobs.filter(pl.col("n_pods") > 1).height) if jobs.height else 0,
        },
        checks=[run_suite_on_frame(staged_kube_jobs_suite(), checked, step.key, JOBS_CHECK)],
    )
