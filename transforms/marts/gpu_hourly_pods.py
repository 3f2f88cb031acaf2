"""Pod GPU time no sample stands for, placed on the pod's node (a helper of marts.fct_gpu_hourly).

fct_job_usage charges a pod its request x its time (open pods to the period end); the GPU
hours allocate a pod-labelled instance by its samples x step. Where a pod's samples do not
stand for its time (a GPU that sent no samples, hours after the data end of an open pod,
gaps), the rest is placed like a Slurm run without labels: kube-state-metrics names the pod's
node, not its devices, so the node's instances share it (``host_spread``/``host_whole``).

Per (cluster, node, job key, hour): ``held`` = sum over the job's pods on the node of GPUs x
seconds of the hour; ``sampled`` = the job's pod-labelled samples from that node in that hour
x step (each instance at most the hour) x GPUs per slot; the deficit ``held - sampled`` is
placed when it exceeds one step of the pods' GPUs (below that it is the sampling error of a
pod's start or end, docs/kubernetes.md "Error bounds"). Samples standing for more than the
pod held (a sample just after the pod's start counts a whole step) are not taken back.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from transforms.helpers.run_hours import per_hour
from transforms.intermediate.int_gpu_minutes_attributed import POD_METHODS
from transforms.staging.stg_kube__jobs import job_key

KEY = ["cluster", "hostname", "job_id_raw", "hour"]


def _held(pods: pl.DataFrame, period_start: datetime, period_end: datetime) -> pl.DataFrame:
    runs = (
        pods.filter(pl.col("start_time").is_not_null() & pl.col("node").is_not_null() & (pl.col("gpus") > 0))
        .select(
            "cluster",
            "gpus",
            hostname="node",
            job_id_raw=job_key(),
            slot_fraction=pl.col("gpus") / pl.col("gpu_slots"),
            run_start=pl.max_horizontal(pl.col("start_time"), pl.lit(period_start)),
            run_end=pl.min_horizontal(pl.col("end_time").fill_null(period_end), pl.lit(period_end)),
        )
        .filter(pl.col("run_end") > pl.col("run_start"))
    )
    return (
        per_hour(runs)
        .group_by(KEY)
        .agg(
            (pl.col("_seconds") * pl.col("gpus")).sum().alias("_held"),
            pl.col("gpus").min().alias("_gpus"),
            pl.col("gpus").sum().alias("_all_gpus"),
            pl.col("slot_fraction").mean().alias("_fraction"),
        )
    )


def _sampled(attributed: pl.DataFrame, step_seconds: int) -> pl.DataFrame:
    rows = attributed.filter(pl.col("attribution_method").is_in(POD_METHODS))
    per_instance = rows.group_by(*KEY, "gpu", "gpu_i_id").agg(pl.col("samples").sum())
    return per_instance.group_by(KEY).agg(
        pl.min_horizontal(pl.col("samples") * step_seconds, pl.lit(3600.0)).sum().alias("_sampled_seconds")
    )


def pod_host_deficit(
    pods: pl.DataFrame, attributed: pl.DataFrame, period_start: datetime, period_end: datetime, step_seconds: int
) -> pl.DataFrame:
    """Per (cluster, hostname, hour): ``_held_gpu_seconds`` the pods held there that their samples
    do not stand for, ``_min_run_gpus`` the fewest GPUs a pod with such time held there."""
    frame = _held(pods, period_start, period_end).join(_sampled(attributed, step_seconds), on=KEY, how="left")
    deficit = pl.col("_held") - pl.col("_sampled_seconds").fill_null(0.0) * pl.col("_fraction")
    return (
        frame.with_columns(_deficit=deficit)
        .filter(pl.col("_deficit") > step_seconds * pl.col("_all_gpus") + 1e-6)
        .group_by("cluster", "hostname", "hour")
        .agg(pl.col("_deficit").sum().alias("_held_gpu_seconds"), pl.col("_gpus").min().alias("_min_run_gpus"))
    )
