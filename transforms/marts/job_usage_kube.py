"""Kubernetes jobs as fct_job_usage runs (a helper of transforms/marts/fct_job_usage.py).

``staging.stg_kube__jobs`` rows become runs with the Slurm columns' meanings where they have
one (docs/marts.md "Kubernetes rows"): ``job_id``/``job_id_raw`` = the job key
(``namespace/pod`` for a bare or replica pod, else ``namespace/owner_kind/owner_name``),
``account`` = namespace, ``partition_name`` = the Kueue LocalQueue (null without one),
``qos`` = the priority class, ``user_name`` null. Department from the staging (pod label,
namespace label, ``[[org.namespaces]]``, else ``unmapped``), division from the department's
``[org.departments]`` entry, else ``unmapped``.

GPU time is summed over the job's pods, each clipped to the period (a gang's pods may start
and end apart): ``_gpu_seconds`` = sum of pod GPUs x clipped pod seconds (MIG as profile
fractions), ``_slot_seconds`` the same with GPU slots (for the expected samples).
``elapsed_seconds`` is the job's span in the period (first pod start -> last pod end).
``gpu_type`` of a MIG job is its pods' MIG profiles (``1g.10gb``), as for Slurm, so the
model label is the inventory's (``A100 1g.10gb``).
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from transforms.staging.stg_kube__jobs import job_key

UNMAPPED = "unmapped"


def _clipped_pod_seconds(pods: pl.DataFrame, period_start: datetime, period_end: datetime) -> pl.DataFrame:
    """Per (cluster, job_id): GPU-seconds and slot-seconds of the job's pods inside the period."""
    start = pl.max_horizontal(pl.col("start_time"), pl.lit(period_start))
    end = pl.min_horizontal(pl.col("end_time").fill_null(period_end), pl.lit(period_end))
    seconds = ((end - start).dt.total_microseconds() / 1e6).clip(lower_bound=0.0)
    return (
        pods.filter(pl.col("start_time").is_not_null())
        .with_columns(job_id=job_key(), _seconds=seconds)
        .group_by("cluster", "job_id")
        .agg(
            (pl.col("gpus") * pl.col("_seconds")).sum().alias("_gpu_seconds"),
            (pl.col("gpu_slots") * pl.col("_seconds")).sum().alias("_slot_seconds"),
            pl.col("mig_profile").drop_nulls().unique().sort().str.join(",").alias("_mig_profiles"),
        )
    )


def is_kube() -> pl.Expr:
    return pl.col("scheduler") == "kubernetes"


def kube_gpu_hours(step_seconds: int) -> pl.Expr:
    """The pods' clipped GPU-seconds less the time-sliced split (samples split off to other
    pods x step x GPUs per slot), in hours, never below 0."""
    split = pl.col("_split_off_samples").fill_null(0.0) * step_seconds * pl.col("gpus") / pl.col("gpu_slots")
    return ((pl.col("_gpu_seconds") - split.fill_nan(0.0)) / 3600.0).clip(lower_bound=0.0)


def kube_runs(
    jobs: pl.DataFrame, pods: pl.DataFrame, divisions: pl.DataFrame, period_start: datetime, period_end: datetime
) -> pl.DataFrame:
    """Kubernetes runs for fct_job_usage: ``jobs`` (stg_kube__jobs rows, already limited to
    the period), ``pods`` (stg_kube__pods rows of the month), ``divisions``
    (department, division). Columns: the jobs' plus division, queue_seconds (float),
    ``_gpu_seconds`` and ``_slot_seconds``."""
    org = divisions.select("department", "division").unique("department", keep="first")
    usage = _clipped_pod_seconds(pods, period_start, period_end)
    return (
        jobs.with_columns(partition_name=pl.col("queue_name"), department=pl.col("department").fill_null(UNMAPPED))
        .join(org, on="department", how="left", maintain_order="left")
        .join(usage, on=["cluster", "job_id"], how="left", maintain_order="left")
        .with_columns(
            pl.col("division").fill_null(UNMAPPED),
            pl.col("_gpu_seconds", "_slot_seconds").fill_null(0.0),
            queue_seconds=pl.col("queue_seconds").round(),
            gpu_type=pl.when(pl.col("is_mig") & (pl.col("_mig_profiles") != ""))
            .then(pl.col("_mig_profiles"))
            .otherwise(pl.col("gpu_type")),
        )
    )
