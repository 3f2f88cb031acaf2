"""marts.mart_kube_queue_monthly: per cluster x queue (Kueue ClusterQueue or Volcano queue) x month.

From ``raw.kube_queue_samples`` (every landed sample of the queue series of the month):

- Kueue admission wait (``<admission_wait>_bucket``/``_sum``/``_count``): the month's counter
  increases (``transforms/helpers/kube_queue_stats.py``); ``admitted_workloads`` = increase of
  ``_count``, mean = increase of ``_sum`` / of ``_count``, p50/p95 from the buckets'
  increases by linear interpolation inside the bucket (PromQL's ``histogram_quantile``):
  off by at most the width of the bucket the quantile falls in.
- Pending workloads: per scrape (``ts`` truncated to the step) the sum over the ``status``
  series; mean and max over the month's scrapes.
- GPU usage vs nominal quota (``resource`` in ``gpu_resources``, summed over flavors, per
  scrape): mean and peak usage, mean quota, usage share (usage / quota) mean and peak, and
  ``borrowed_gpu_hours`` = sum of (usage - quota where above) x step.
- Volcano (``volcano_e2e_job_scheduling_duration``, milliseconds, one series per job):
  ``scheduled_jobs`` and the mean / max of each job's last value, in seconds.
"""

from __future__ import annotations

from datetime import date

import polars as pl

from transforms.helpers.kube_queue_stats import bucket_quantiles, increase

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "month": pl.Date(),
    "queue": pl.String(),
    "queue_kind": pl.String(),
    "admitted_workloads": pl.Int64(),
    "admission_wait_mean_seconds": pl.Float64(),
    "admission_wait_p50_seconds": pl.Float64(),
    "admission_wait_p95_seconds": pl.Float64(),
    "pending_workloads_mean": pl.Float64(),
    "pending_workloads_max": pl.Float64(),
    "gpu_nominal_quota": pl.Float64(),
    "gpu_usage_mean": pl.Float64(),
    "gpu_usage_peak": pl.Float64(),
    "usage_share_mean": pl.Float64(),
    "usage_share_peak": pl.Float64(),
    "borrowed_gpu_hours": pl.Float64(),
    "scheduled_jobs": pl.Int64(),
    "scheduling_duration_mean_seconds": pl.Float64(),
    "scheduling_duration_max_seconds": pl.Float64(),
}
KEY = ["cluster", "queue"]
GPU_RESOURCES = ("nvidia.com/gpu",)


def _label(name: str) -> pl.Expr:
    return pl.col("labels").str.json_path_match(f"$.{name}")


def _admission(samples: pl.DataFrame, wait: str) -> pl.DataFrame:
    count = increase(samples.filter(pl.col("metric") == f"{wait}_count"), KEY).rename({"increase": "_count"})
    total = increase(samples.filter(pl.col("metric") == f"{wait}_sum"), KEY).rename({"increase": "_sum"})
    bucket_rows = samples.filter(pl.col("metric") == f"{wait}_bucket").with_columns(
        le=_label("le").str.replace(r"^\+Inf$", "inf").cast(pl.Float64)
    )
    buckets = increase(bucket_rows, [*KEY, "le"])
    quantiles = bucket_quantiles(buckets, KEY, {"admission_wait_p50_seconds": 0.5, "admission_wait_p95_seconds": 0.95})
    return (
        count.join(total, on=KEY, how="full", coalesce=True)
        .join(quantiles, on=KEY, how="full", coalesce=True)
        .select(
            *KEY,
            admitted_workloads=pl.col("_count").round().cast(pl.Int64),
            admission_wait_mean_seconds=pl.when(pl.col("_count") > 0).then(pl.col("_sum") / pl.col("_count")),
            admission_wait_p50_seconds="admission_wait_p50_seconds",
            admission_wait_p95_seconds="admission_wait_p95_seconds",
        )
    )


def _per_scrape(samples: pl.DataFrame, metric: str, step_seconds: int, name: str) -> pl.DataFrame:
    return (
        samples.filter(pl.col("metric") == metric)
        .group_by(*KEY, pl.col("ts").dt.truncate(f"{step_seconds}s"))
        .agg(pl.col("value").sum().alias(name))
    )


def _pending(samples: pl.DataFrame, metric: str, step_seconds: int) -> pl.DataFrame:
    return (
        _per_scrape(samples, metric, step_seconds, "_pending")
        .group_by(KEY)
        .agg(pending_workloads_mean=pl.col("_pending").mean(), pending_workloads_max=pl.col("_pending").max())
    )


def _quota(
    samples: pl.DataFrame, usage: str, quota: str, gpu_resources: tuple[str, ...], step_seconds: int
) -> pl.DataFrame:
    gpus = samples.filter(_label("resource").is_in(list(gpu_resources)))
    joined = _per_scrape(gpus, usage, step_seconds, "_usage").join(
        _per_scrape(gpus, quota, step_seconds, "_quota"), on=[*KEY, "ts"], how="full", coalesce=True
    )
    share = pl.when(pl.col("_quota") > 0).then(pl.col("_usage").fill_null(0.0) / pl.col("_quota"))
    above = (pl.col("_usage").fill_null(0.0) - pl.col("_quota").fill_null(0.0)).clip(lower_bound=0.0)
    return (
        joined.with_columns(_share=share, _above=above)
        .group_by(KEY)
        .agg(
            gpu_nominal_quota=pl.col("_quota").mean(),
            gpu_usage_mean=pl.col("_usage").mean(),
            gpu_usage_peak=pl.col("_usage").max(),
            usage_share_mean=pl.col("_share").mean(),
            usage_share_peak=pl.col("_share").max(),
            borrowed_gpu_hours=pl.col("_above").sum() * step_seconds / 3600.0,
        )
    )


def _volcano(samples: pl.DataFrame, metric: str) -> pl.DataFrame:
    per_job = (
        samples.filter(pl.col("metric") == metric)
        .sort("ts")
        .group_by(*KEY, "labels")
        .agg(pl.col("value").last() / 1000.0)
    )
    return per_job.group_by(KEY).agg(
        scheduled_jobs=pl.len().cast(pl.Int64),
        scheduling_duration_mean_seconds=pl.col("value").mean(),
        scheduling_duration_max_seconds=pl.col("value").max(),
    )


def mart_kube_queue_monthly(
    samples: pl.DataFrame,
    month: date,
    step_seconds: int,
    kueue: dict[str, str],
    volcano_metric: str,
    gpu_resources: tuple[str, ...] = GPU_RESOURCES,
) -> pl.DataFrame:
    """Rows in SCHEMA. ``samples``: raw.kube_queue_samples rows of the month; ``kueue``: the
    KueueConfig metric names (``admission_wait``, ``pending_workloads``, ``resource_usage``,
    ``nominal_quota``). Rows without a queue name are left out (the asset counts them)."""
    samples = samples.filter(pl.col("queue").is_not_null())
    parts = [
        _admission(samples, kueue["admission_wait"]),
        _pending(samples, kueue["pending_workloads"], step_seconds),
        _quota(samples, kueue["resource_usage"], kueue["nominal_quota"], gpu_resources, step_seconds),
    ]
    frame = parts[0]
    for part in parts[1:]:
        frame = frame.join(part, on=KEY, how="full", coalesce=True)
    frame = frame.with_columns(queue_kind=pl.lit("kueue"))
    volcano = _volcano(samples, volcano_metric).with_columns(queue_kind=pl.lit("volcano"))
    out = pl.concat([frame, volcano], how="diagonal_relaxed").with_columns(month=pl.lit(month, pl.Date))
    return (
        out.select([pl.col(c) if c in out.columns else pl.lit(None).alias(c) for c in SCHEMA])
        .cast(SCHEMA)
        .sort("cluster", "queue_kind", "queue")
    )
