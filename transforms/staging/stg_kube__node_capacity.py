"""staging.stg_kube__node_capacity: the GPUs and MIG instances each Kubernetes node advertised, per hour.

From ``raw.kube_node_runs`` (``kube_node_status_capacity`` of the GPU resources and
``kube_node_labels``). One row per cluster, node, hour and profile (``gpu_i_profile`` null: whole
GPUs) with the count the node advertised at its last scrape in the hour (a re-partition inside
an hour counts from the next hour on, the layout the hour ended with; never the old and the new
layout together). A run stands for its samples' time: ``[first_ts, last_ts + step)``.

- ``nvidia_com_gpu``: whole GPUs, except on a node labelled with the ``single`` MIG strategy,
  where the device plugin advertises its MIG instances under that name: the count is of
  instances of the profile named in the node's ``nvidia.com/gpu.product`` label
  (``A100-SXM4-80GB-MIG-1g.10gb``). A ``single`` node whose product names no profile counts
  whole GPUs.
- ``nvidia_com_mig_<profile>`` (the ``mixed`` strategy): instances of ``<profile>``
  (``nvidia_com_mig_1g_10gb`` = ``1g.10gb``, ``_me`` = ``+me``), as the staged pods read them.
- A node whose ``nvidia.com/gpu.product`` ends in ``-SHARED`` shares its GPUs (time-slicing or
  MPS: the device plugin then advertises GPUs x replicas under ``nvidia_com_gpu``): its whole-GPU
  count says nothing about how many GPUs it has, so it is left out (the config's cards count).
- Counts of 0 are left out; a node-hour whose resources are all 0 has no row (the device plugin
  was not serving: nothing observed).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from transforms.helpers.kube_parse import mig_profile

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "hour": pl.Datetime("us"),
    "gpu_i_profile": pl.String(),
    "n_advertised": pl.Int32(),
}
SINGLE = "single"
_PRODUCT_PROFILE = r"-MIG-(\d+g\.\d+gb(?:\+me)?)"
SHARED_SUFFIX = "-SHARED"  # the device plugin's product label on a time-sliced or MPS node


def _hourly_last(runs: pl.DataFrame, start: datetime, end: datetime, step: timedelta) -> pl.DataFrame:
    """Per run and hour it overlaps: the run with its end clipped to the hour; then per node, key
    and hour the latest run, kept only where it reached the node's last moment seen in the hour."""
    spans = runs.with_columns(
        _from=pl.col("first_ts").clip(start, end),
        _to=(pl.col("last_ts") + step).clip(start, end),
    ).filter(pl.col("_to") > pl.col("_from"))
    spans = spans.with_columns(
        hour=pl.datetime_ranges(pl.col("_from").dt.truncate("1h"), pl.col("_to") - pl.duration(microseconds=1), "1h")
    ).explode("hour")
    spans = spans.with_columns(_seen=pl.min_horizontal("_to", pl.col("hour") + pl.duration(hours=1)))
    latest = spans.sort("first_ts").group_by("cluster", "node", "_key", "hour").last()
    last_seen = pl.col("_seen").max().over("cluster", "node", "hour")
    return latest.filter(pl.col("_seen") == last_seen)


def stg_kube__node_capacity(
    runs: pl.DataFrame,
    start: datetime,
    end: datetime,
    step_seconds: int,
    *,
    capacity_metric: str,
    labels_metric: str,
    gpu_resource: str,
    mig_resource_prefix: str,
) -> pl.DataFrame:
    """Rows in SCHEMA for the hours of ``[start, end)`` from ``raw.kube_node_runs`` rows."""
    step = timedelta(seconds=step_seconds)
    resource = pl.col("labels").str.json_path_match("$.resource")
    capacity = runs.filter(pl.col("metric") == capacity_metric).with_columns(_key=resource)
    counts = _hourly_last(capacity, start, end, step)
    labels = runs.filter(pl.col("metric") == labels_metric).with_columns(_key=pl.lit("labels"))
    node_labels = _hourly_last(labels, start, end, step).select(
        "cluster",
        "node",
        "hour",
        pl.col("labels").str.json_path_match("$.label_nvidia_com_mig_strategy").alias("_strategy"),
        pl.col("labels")
        .str.json_path_match("$.label_nvidia_com_gpu_product")
        .str.extract(_PRODUCT_PROFILE, 1)
        .alias("_single"),
        pl.col("labels")
        .str.json_path_match("$.label_nvidia_com_gpu_product")
        .str.ends_with(SHARED_SUFFIX)
        .fill_null(False)
        .alias("_shared"),
    )
    counts = counts.join(node_labels, on=["cluster", "node", "hour"], how="left")
    single = (pl.col("_strategy") == SINGLE) & pl.col("_single").is_not_null()
    whole = pl.col("_key") == gpu_resource
    profile = (
        pl.when(whole & single)
        .then(pl.col("_single"))
        .when(whole)
        .then(pl.lit(None, pl.String))
        .otherwise(mig_profile(pl.col("_key"), mig_resource_prefix))
    )
    kept = counts.filter(whole | pl.col("_key").str.starts_with(mig_resource_prefix)).filter(pl.col("value") > 0)
    kept = kept.filter(~(whole & pl.col("_shared").fill_null(False)))
    return (
        kept.select(
            "cluster",
            pl.col("node").alias("hostname"),
            "hour",
            profile.alias("gpu_i_profile"),
            pl.col("value").round().cast(pl.Int32).alias("n_advertised"),
        )
        .group_by("cluster", "hostname", "hour", "gpu_i_profile")
        .agg(pl.col("n_advertised").sum())
        .select(list(SCHEMA))
        .cast(SCHEMA)
        .sort("cluster", "hostname", "hour", "gpu_i_profile", nulls_last=False)
    )
