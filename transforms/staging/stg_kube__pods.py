"""staging.stg_kube__pods: one row per GPU pod, from ``raw.kube_series`` rows (any days).

A pod is the key ``(cluster, namespace, pod, uid)``; pods without a GPU request
(``gpu_resource`` or a MIG resource) are not GPU workloads and are left out.

- Times: ``created_time``, ``scheduled_time``, ``start_time`` from the kube-state-metrics
  timestamp gauges (exact). ``end_time``: ``kube_pod_completion_time`` where exported
  (``end_source = completion_time``, error 0); else for a pod whose last phase is
  Succeeded/Failed the last sample that said Running (``phase``); else the last sample of
  any of the pod's series (``last_sample``, a deleted pod). Both fallbacks are early by
  less than one sample step: ``end_error_seconds = step_seconds``. A pod whose series
  reach ``data_end`` (within a step) and is not finished is open: ``end_time`` null,
  ``is_open``, charged until ``data_end``.
- ``gpus``: whole GPUs count 1, MIG resources (``nvidia_com_mig_3g_40gb``) their profile
  weight (the Slurm path's table: ``rates.mig_profile_weights``, else slices / 7);
  ``gpu_seconds = gpus x (end or data_end - start)``.
- ``department``: the first of ``department_labels`` set on the pod, else on its
  namespace, else the config's namespace mapping, else ``unmapped``
  (``department_source`` says which).
- ``queue_seconds``: created -> scheduled. ``queue_name``: the pod's ``queue_label``.
- ``deployment_name``: for ReplicaSet owners, the owner without its pod-template hash.

Pods whose MIG resource names no valid profile are returned separately (QUARANTINE_SCHEMA).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import polars as pl

from config.org import UNMAPPED
from contracts.schemas import QUARANTINE_SCHEMA
from transforms.helpers.kube_parse import (
    POD_KEY,
    across_days,
    labels_of,
    pod_gpus,
    pod_info,
    pod_phase,
    pod_times,
)

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "namespace": pl.String(),
    "pod": pl.String(),
    "pod_uid": pl.String(),
    "node": pl.String(),
    "owner_kind": pl.String(),
    "owner_name": pl.String(),
    "deployment_name": pl.String(),
    "priority_class": pl.String(),
    "queue_name": pl.String(),
    "department": pl.String(),
    "department_source": pl.String(),
    "phase": pl.String(),
    "created_time": pl.Datetime("us"),
    "scheduled_time": pl.Datetime("us"),
    "start_time": pl.Datetime("us"),
    "end_time": pl.Datetime("us"),
    "end_source": pl.String(),
    "end_error_seconds": pl.Int64(),
    "is_open": pl.Boolean(),
    "gpus": pl.Float64(),
    "gpu_slots": pl.Int32(),
    "gpu_type": pl.String(),
    "is_mig": pl.Boolean(),
    "mig_profile": pl.String(),
    "queue_seconds": pl.Float64(),
    "gpu_seconds": pl.Float64(),
}
DEFAULT_METRICS = {
    "pod_info": "kube_pod_info",
    "pod_labels": "kube_pod_labels",
    "namespace_labels": "kube_namespace_labels",
    "resource_requests": "kube_pod_container_resource_requests",
    "resource_limits": "kube_pod_container_resource_limits",
    "pod_created": "kube_pod_created",
    "pod_scheduled": "kube_pod_status_scheduled_time",
    "pod_start": "kube_pod_start_time",
    "pod_phase": "kube_pod_status_phase",
    "pod_completion": "kube_pod_completion_time",
}
TERMINAL = ("Succeeded", "Failed")
_RS_HASH = r"^(.+)-[a-z0-9]{5,10}$"


def _department(pods: pl.DataFrame, namespaces: pl.DataFrame, dept_labels: list[str]) -> pl.DataFrame:
    mapping = namespaces.select("cluster", "namespace", pl.col("department").alias("_mapped")).unique(
        ["cluster", "namespace"]
    )
    pods = pods.join(mapping, on=["cluster", "namespace"], how="left")
    pod_value = pl.coalesce([pl.col(f"pod_{n}") for n in dept_labels])
    ns_value = pl.coalesce([pl.col(f"ns_{n}") for n in dept_labels])
    return pods.with_columns(
        department=pl.coalesce(pod_value, ns_value, pl.col("_mapped"), pl.lit(UNMAPPED)),
        department_source=pl.when(pod_value.is_not_null())
        .then(pl.lit("pod_label"))
        .when(ns_value.is_not_null())
        .then(pl.lit("namespace_label"))
        .when(pl.col("_mapped").is_not_null())
        .then(pl.lit("namespace_mapping"))
        .otherwise(pl.lit(UNMAPPED)),
    )


def _end(step_seconds: int, data_end: datetime) -> list[pl.Expr]:
    terminal = pl.col("phase").is_in(TERMINAL)
    from_phase = terminal & pl.col("last_running").is_not_null()
    source = (
        pl.when(pl.col("completion_time").is_not_null())
        .then(pl.lit("completion_time"))
        .when(from_phase)
        .then(pl.lit("phase"))
        .otherwise(pl.lit("last_sample"))
    )
    is_open = (
        pl.col("completion_time").is_null()
        & ~terminal
        & (pl.col("last_seen") >= pl.lit(data_end) - pl.duration(seconds=step_seconds))
    )
    end = pl.coalesce(pl.col("completion_time"), pl.when(from_phase).then(pl.col("last_running")), pl.col("last_seen"))
    return [source.alias("end_source"), is_open.alias("is_open"), end.alias("_end")]


def stg_kube__pods(
    raw: pl.DataFrame,
    namespaces: pl.DataFrame,
    *,
    window_start: datetime,
    window_end: datetime,
    data_end: datetime,
    step_seconds: int,
    department_labels: list[str],
    queue_label: str,
    gpu_resource: str = "nvidia_com_gpu",
    mig_resource_prefix: str = "nvidia_com_mig_",
    mig_weights: Mapping[str, float] | None = None,
    metrics: Mapping[str, str] | None = None,
    node_gpus: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(pods overlapping [window_start, window_end) or created in it, quarantined pods).

    Quarantined, never staged: a MIG resource that names no profile, a negative GPU request, and
    more GPUs than the pod's node holds (``node_gpus``: cluster, node, node_gpus; a node not in it
    is not checked). The rest of the month builds."""
    m = {**DEFAULT_METRICS, **(metrics or {})}
    series = across_days(raw.filter(pl.col("metric") != m["namespace_labels"]))
    times = pod_times(
        series,
        {
            "created_time": m["pod_created"],
            "scheduled_time": m["pod_scheduled"],
            "start_time": m["pod_start"],
            "completion_time": m["pod_completion"],
        },
    )
    requests = series.filter(pl.col("metric") == m["resource_requests"])
    limits = series.filter(pl.col("metric") == m["resource_limits"]).join(  # pods with no request series
        requests.select(POD_KEY).unique(), on=POD_KEY, how="anti", nulls_equal=True
    )
    gpus = pod_gpus(pl.concat([requests, limits]), gpu_resource, mig_resource_prefix, mig_weights or {})
    pods = (
        gpus.join(times, on=POD_KEY, how="left", nulls_equal=True)
        .join(pod_info(series.filter(pl.col("metric") == m["pod_info"])), on=POD_KEY, how="left", nulls_equal=True)
        .join(pod_phase(series.filter(pl.col("metric") == m["pod_phase"])), on=POD_KEY, how="left", nulls_equal=True)
        .join(
            labels_of(
                series.filter(pl.col("metric") == m["pod_labels"]), POD_KEY, [*department_labels, queue_label], "pod_"
            ),
            on=POD_KEY,
            how="left",
            nulls_equal=True,
        )
    )
    ns_rows = raw.filter(pl.col("metric") == m["namespace_labels"])
    pods = pods.join(
        labels_of(ns_rows, ["cluster", "namespace"], department_labels, "ns_"), on=["cluster", "namespace"], how="left"
    )
    pods = _with_problem(pods, node_gpus)
    bad = pods.filter(pl.col("_problem").is_not_null())
    pods = _department(pods.filter(pl.col("_problem").is_null()), namespaces, department_labels)
    held_until = pl.when(pl.col("is_open")).then(pl.lit(data_end)).otherwise(pl.col("_end"))
    pods = pods.with_columns(*_end(step_seconds, data_end)).with_columns(
        created_time=pl.coalesce("created_time", "first_seen"),
        pod_uid=pl.col("uid"),
        queue_name=pl.col(f"pod_{queue_label}"),
        end_time=pl.when(pl.col("is_open")).then(None).otherwise(pl.col("_end")),
        end_error_seconds=pl.when(pl.col("end_source") == "completion_time").then(0).otherwise(step_seconds),
        is_mig=pl.col("mig_profile").is_not_null(),
        deployment_name=pl.when(pl.col("owner_kind") == "ReplicaSet").then(
            pl.col("owner_name").str.extract(_RS_HASH, 1)
        ),
        queue_seconds=(pl.col("scheduled_time") - pl.coalesce("created_time", "first_seen")).dt.total_microseconds()
        / 1e6,
        gpu_seconds=pl.when(pl.col("start_time").is_null())
        .then(0.0)
        .otherwise(pl.col("gpus") * ((held_until - pl.col("start_time")).dt.total_microseconds() / 1e6).clip(0.0)),
    )
    start_or_created = pl.coalesce("start_time", "created_time")
    overlaps = (start_or_created < window_end) & (pl.col("end_time").is_null() | (pl.col("end_time") > window_start))
    pods = pods.filter(overlaps).select(list(SCHEMA)).cast(SCHEMA).sort("cluster", "namespace", "pod", "pod_uid")  # type: ignore[arg-type]
    return pods, _quarantine(bad)


def _with_problem(pods: pl.DataFrame, node_gpus: pl.DataFrame | None) -> pl.DataFrame:
    """``_problem``: why a pod cannot be billed as its series say (null when it can)."""
    if node_gpus is None:
        node_gpus = pl.DataFrame(schema={"cluster": pl.String(), "node": pl.String(), "node_gpus": pl.Float64()})
    pods = pods.join(
        node_gpus.select("cluster", "node", pl.col("node_gpus").alias("_node_gpus")), on=["cluster", "node"], how="left"
    )
    return pods.with_columns(
        _problem=pl.when(pl.col("bad_resource").is_not_null())
        .then(pl.format("GPU resource {} names no MIG profile", "bad_resource"))
        .when(pl.col("gpus") < 0)
        .then(pl.format("negative GPU request ({} GPUs)", "gpus"))
        .when(pl.col("gpus") > pl.col("_node_gpus") + 1e-9)
        .then(pl.format("{} GPUs requested on node {} of {} GPUs", "gpus", "node", "_node_gpus"))
    ).drop("_node_gpus")


def _quarantine(bad: pl.DataFrame) -> pl.DataFrame:
    return bad.select(
        pl.col("cluster"),
        pl.lit("stg_kube__pods").alias("source"),
        pl.lit("").alias("partition_key"),
        pl.format("{}/{} uid={}", "namespace", "pod", "uid").alias("location"),
        pl.col("_problem").alias("reason"),
        pl.col("gpu_type").alias("payload"),
        pl.lit(1, pl.Int64).alias("n_rows"),
    ).cast(QUARANTINE_SCHEMA)  # type: ignore[arg-type]
