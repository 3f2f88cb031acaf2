"""LongSamples of kube-state-metrics / Kueue / Volcano -> the raw landing tables (pure).

``raw.kube_series``: one row per series and day. kube-state-metrics values are constant
per series (a timestamp, a request, a 0/1 flag) except ``kube_pod_status_phase``, whose
0/1 changes are what ``last_nonzero_ts`` keeps; so a day is landed as the series' first
and last sample time, count, first/last/min/max value and last non-zero sample time,
instead of every 30 s repeat. Labels other than namespace/pod/uid go to ``labels`` (JSON,
sorted keys); on ``kube_pod_labels`` / ``kube_namespace_labels`` only the allowlisted
``label_*`` labels are kept (``KubernetesConfig.kept_labels``).

``raw.kube_queue_samples``: every sample of the Kueue ClusterQueue series (the admission
wait histogram's buckets, sum and count, pending workloads, usage and nominal quota: they
change over the day, and there are few of them) and of Volcano's per-job scheduling
duration, with the queue name pulled out (Kueue's ``cluster_queue`` label, else Volcano's
``queue``).

A pod series without a ``namespace`` or ``pod`` label cannot be given to a pod: it is
quarantined with its sample count, never dropped silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date

import polars as pl

from config.kubernetes import KubernetesConfig
from contracts.schemas import QUARANTINE_SCHEMA
from contracts.sources import KUBE
from sources.kube.node_runs import RAW_KUBE_NODE_RUNS_SCHEMA, node_runs, node_series
from sources.prometheus import LongSamples

SOURCE = KUBE  # the raw.quarantine / meta.landings source name
RAW_KUBE_SERIES_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "day": pl.Date(),
    "metric": pl.String(),
    "namespace": pl.String(),
    "pod": pl.String(),
    "uid": pl.String(),
    "labels": pl.String(),
    "first_ts": pl.Datetime("us"),
    "last_ts": pl.Datetime("us"),
    "n_samples": pl.Int64(),
    "first_value": pl.Float64(),
    "last_value": pl.Float64(),
    "min_value": pl.Float64(),
    "max_value": pl.Float64(),
    "last_nonzero_ts": pl.Datetime("us"),
}
RAW_KUBE_QUEUE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "day": pl.Date(),
    "metric": pl.String(),
    "queue": pl.String(),
    "labels": pl.String(),
    "ts": pl.Datetime("us"),
    "value": pl.Float64(),
}
ID_LABELS = ("__name__", "series_id", "namespace", "pod", "uid")


@dataclass(frozen=True)
class Landing:
    series: pl.DataFrame  # RAW_KUBE_SERIES_SCHEMA
    queue_samples: pl.DataFrame  # RAW_KUBE_QUEUE_SCHEMA
    quarantine: pl.DataFrame  # QUARANTINE_SCHEMA
    node_runs: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=RAW_KUBE_NODE_RUNS_SCHEMA))


def _labels_json(row: dict[str, str | None], kept: set[str] | None) -> str:
    labels = {k: v for k, v in row.items() if k not in ID_LABELS and v is not None and v != ""}
    if kept is not None:
        labels = {k: v for k, v in labels.items() if not k.startswith("label_") or k in kept}
    return json.dumps(labels, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _series_meta(series: pl.DataFrame, kube: KubernetesConfig) -> pl.DataFrame:
    label_metrics = {kube.metric_names.pod_labels, kube.metric_names.namespace_labels}
    kept = set(kube.kept_labels)
    rows = []
    for row in series.iter_rows(named=True):
        name = row["__name__"]
        # Scraped with honor_labels false, the object's own namespace and pod come as exported_*,
        # and the plain labels name the kube-state-metrics pod: the exported ones win.
        namespace = row.get("exported_namespace") or row.get("namespace") or None
        pod = row.get("exported_pod") or row.get("pod") or None
        rows.append(
            {
                "series_id": row["series_id"],
                "metric": name,
                "namespace": namespace,
                "pod": pod,
                "uid": row.get("exported_uid") or row.get("uid") or None,
                "labels": _labels_json(row, kept if name in label_metrics else None),
            }
        )
    schema = {
        "series_id": pl.UInt32,
        "metric": pl.String,
        "namespace": pl.String,
        "pod": pl.String,
        "uid": pl.String,
        "labels": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)


def _summaries(samples: pl.DataFrame) -> pl.DataFrame:
    ts, value = pl.col("ts"), pl.col("value")
    return samples.group_by("series_id").agg(
        first_ts=ts.min(),
        last_ts=ts.max(),
        n_samples=pl.len().cast(pl.Int64),
        first_value=value.sort_by(ts).first(),
        last_value=value.sort_by(ts).last(),
        min_value=value.min(),
        max_value=value.max(),
        last_nonzero_ts=ts.filter(value != 0).max(),
    )


def _orphan_nodes(long: LongSamples, nodes: pl.DataFrame, cluster: str, day: date) -> pl.DataFrame:
    """Quarantine rows for the node series without a ``node`` label."""
    orphans = nodes.filter(pl.col("node").is_null())
    counts = (
        long.samples.join(orphans, on="series_id")
        .group_by("series_id", "metric", "labels")
        .agg(
            pl.len().cast(pl.Int64).alias("n_rows"),
            pl.col("ts").min().alias("first_ts"),
            pl.col("ts").max().alias("last_ts"),
        )
    )
    return (
        counts.with_columns(
            pl.lit(SOURCE).alias("source"),
            pl.lit(day.isoformat()).alias("partition_key"),
            pl.concat_str(pl.col("metric"), pl.col("labels")).alias("location"),
            pl.lit("node series without a node label").alias("reason"),
            pl.lit(cluster).alias("cluster"),
            pl.concat_str(
                pl.lit("samples "),
                pl.col("first_ts").cast(pl.String),
                pl.lit(" .. "),
                pl.col("last_ts").cast(pl.String),
            ).alias("payload"),
        )
        .select(list(QUARANTINE_SCHEMA))
        .cast(QUARANTINE_SCHEMA)
    )


def land(
    long: LongSamples, kube: KubernetesConfig, cluster: str, day: date, step_seconds: int | None = None
) -> Landing:
    """The day's raw rows (``long`` holds the day's samples only); ``step_seconds``: the
    kube-state-metrics scrape interval the node series' runs are split by (docs/kubernetes.md)."""
    long_all = long
    nodes = node_series(long, kube)
    runs = node_runs(long, nodes.filter(pl.col("node").is_not_null()), cluster, day, step_seconds)
    long = LongSamples(long.series.filter(~pl.col("__name__").is_in(kube.node_metrics())), long.samples)
    meta = _series_meta(long.series, kube)
    queue_metrics = set(kube.kueue.metrics()) if kube.kueue.enabled else set()
    if kube.volcano.enabled:
        queue_metrics.add(kube.volcano.job_scheduling_duration)
    pod_metrics = set(kube.pod_metrics()) - {kube.metric_names.namespace_labels}
    tags = {"cluster": pl.lit(cluster), "day": pl.lit(day, pl.Date)}
    in_queue = pl.col("metric").is_in(list(queue_metrics))
    orphan = pl.col("metric").is_in(list(pod_metrics)) & (pl.col("namespace").is_null() | pl.col("pod").is_null())
    summaries = _summaries(long.samples).join(meta, on="series_id", how="inner")
    series = summaries.filter(~in_queue & ~orphan).with_columns(**tags).select(list(RAW_KUBE_SERIES_SCHEMA))
    bad = summaries.filter(orphan).with_columns(
        pl.lit(SOURCE).alias("source"),
        pl.lit(day.isoformat()).alias("partition_key"),
        pl.concat_str(pl.col("metric"), pl.col("labels")).alias("location"),
        pl.col("n_samples").alias("n_rows"),
        pl.lit("pod series without a namespace or pod label").alias("reason"),
        tags["cluster"].alias("cluster"),
        pl.concat_str(
            pl.lit("samples "), pl.col("first_ts").cast(pl.String), pl.lit(" .. "), pl.col("last_ts").cast(pl.String)
        ).alias("payload"),
    )
    queue_ids = meta.filter(in_queue)
    queue = long.samples.join(queue_ids, on="series_id", how="inner").with_columns(
        queue=pl.coalesce(
            pl.col("labels").str.json_path_match("$.cluster_queue"), pl.col("labels").str.json_path_match("$.queue")
        ),
        **tags,
    )
    quarantine = pl.concat(
        [bad.select(list(QUARANTINE_SCHEMA)).cast(QUARANTINE_SCHEMA), _orphan_nodes(long_all, nodes, cluster, day)]
    )
    return Landing(
        series.sort("metric", "namespace", "pod", "labels"),
        queue.select(list(RAW_KUBE_QUEUE_SCHEMA)).sort("metric", "labels", "ts"),
        quarantine,
        runs,
    )  # type: ignore[arg-type]
