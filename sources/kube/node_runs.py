"""kube-state-metrics node series of one day -> ``raw.kube_node_runs`` rows (pure).

A node's advertised GPUs, labels, Ready condition and cordon change a few times a month, so a
day is landed as runs, not samples: one row per series and run of equal values, a run ending
where the value changes or where the series has a gap of more than two scrape steps (the node
was not reported). Kept series:

- ``kube_node_status_capacity`` of the GPU resources only (``gpu_resource`` and the
  ``mig_resource_prefix`` ones; the CPU, memory... series are dropped);
- ``kube_node_labels`` with only the GPU feature discovery labels ``NODE_LABELS_KEPT`` (the MIG
  strategy and the product, which names the MIG profile under the ``single`` strategy);
- ``kube_node_status_condition`` of the ``Ready`` condition, and ``kube_node_spec_unschedulable``.

``labels`` holds the series' labels other than ``node`` (JSON, sorted keys). A node series
without a ``node`` label cannot be given to a node: it is quarantined with its sample count.
"""

from __future__ import annotations

import json
from datetime import date

import polars as pl

from config.kubernetes import KubernetesConfig
from sources.prometheus import LongSamples

MIG_STRATEGY_LABEL = "label_nvidia_com_mig_strategy"  # nvidia.com/mig.strategy: single or mixed
GPU_PRODUCT_LABEL = "label_nvidia_com_gpu_product"  # nvidia.com/gpu.product: ...-MIG-1g.10gb under single
NODE_LABELS_KEPT = (MIG_STRATEGY_LABEL, GPU_PRODUCT_LABEL)
READY = "Ready"
DROPPED_LABELS = ("__name__", "series_id", "node", "instance", "job")

RAW_KUBE_NODE_RUNS_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "day": pl.Date(),
    "metric": pl.String(),
    "node": pl.String(),
    "labels": pl.String(),
    "value": pl.Float64(),
    "first_ts": pl.Datetime("us"),
    "last_ts": pl.Datetime("us"),
    "n_samples": pl.Int64(),
}


def _kept(row: dict, kube: KubernetesConfig) -> bool:
    """Whether a node series is one cardhours lands."""
    names = kube.node_metric_names
    metric = row["__name__"]
    if metric == names.node_capacity:
        resource = row.get("resource") or ""
        return resource == kube.gpu_resource or resource.startswith(kube.mig_resource_prefix)
    if metric == names.node_condition:
        return row.get("condition") == READY
    return metric in (names.node_labels, names.node_unschedulable)


def _labels_json(row: dict, node_labels: bool) -> str:
    labels = {k: v for k, v in row.items() if k not in DROPPED_LABELS and v not in (None, "")}
    if node_labels:
        labels = {k: v for k, v in labels.items() if k in NODE_LABELS_KEPT}
    return json.dumps(labels, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def node_series(long: LongSamples, kube: KubernetesConfig) -> pl.DataFrame:
    """``series_id, metric, node, labels`` of the node series landed (node null: no node label)."""
    names = kube.node_metric_names
    series = long.series.filter(pl.col("__name__").is_in(kube.node_metrics()))
    rows = [
        {
            "series_id": row["series_id"],
            "metric": row["__name__"],
            "node": row.get("node") or None,
            "labels": _labels_json(row, row["__name__"] == names.node_labels),
        }
        for row in series.iter_rows(named=True)
        if _kept(row, kube)
    ]
    schema = {"series_id": pl.UInt32, "metric": pl.String, "node": pl.String, "labels": pl.String}
    return pl.DataFrame(rows, schema=schema)


def node_runs(long: LongSamples, meta: pl.DataFrame, cluster: str, day: date, step_seconds: int | None) -> pl.DataFrame:
    """Runs of equal values per node series (``meta``: ``node_series`` rows with a node);
    ``step_seconds`` None: each series' median sample interval."""
    samples = long.samples.join(meta.select("series_id"), on="series_id", how="semi").sort("series_id", "ts")
    gap = pl.col("ts").diff().over("series_id")
    step = pl.duration(seconds=step_seconds) if step_seconds else gap.median().over("series_id")
    value_changed = pl.col("value") != pl.col("value").shift().over("series_id")
    new_run = (value_changed | (gap > 2 * step)).fill_null(True)
    runs = (
        samples.with_columns(run=new_run.cast(pl.Int64).cum_sum().over("series_id"))
        .group_by("series_id", "run")
        .agg(
            pl.col("value").first(),
            pl.col("ts").min().alias("first_ts"),
            pl.col("ts").max().alias("last_ts"),
            pl.len().cast(pl.Int64).alias("n_samples"),
        )
        .join(meta, on="series_id")
        .with_columns(cluster=pl.lit(cluster), day=pl.lit(day, pl.Date))
    )
    return runs.select(list(RAW_KUBE_NODE_RUNS_SCHEMA)).sort("metric", "node", "labels", "first_ts")
