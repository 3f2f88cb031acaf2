"""marts.fct_job_usage: one row per job run in a period, with its GPU hours and how busy they were.

GPU hours are clipped to [period_start, period_end): a run crossing the boundary counts
only its inside part in each period; a run with no end counts up to period_end.

Attribution (this version): hourly DCGM rows whose ``hpc_job`` label equals the run's
``job_id_raw`` on the same cluster, with ``hour`` in [floor_hour(max(start, period_start)),
min(end or period_end, period_end)). Known limit: two requeued runs of one job that
share an hour both receive that hour's samples. ``attribution_method`` records
"hpc_job_label" when samples matched, "none" otherwise.

Utilization is the sample-weighted mean of the best activity signal present among the
run's samples (sm_active, else gr_engine_active, else gpu_util); it is null without
samples, and so are active/idle GPU hours.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from transforms.stg_dcgm__gpu_hourly import BEST_SIGNAL_ORDER
from transforms.stg_slurm__jobs import in_window

UNMAPPED = "unmapped"
MJ_PER_KWH = 3.6e9

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "scheduler": pl.String(),
    "job_id": pl.String(),
    "job_id_raw": pl.String(),
    "job_name": pl.String(),
    "user_name": pl.String(),
    "account": pl.String(),
    "department": pl.String(),
    "division": pl.String(),
    "partition_name": pl.String(),
    "qos": pl.String(),
    "state": pl.String(),
    "submit_time": pl.Datetime("us"),
    "eligible_time": pl.Datetime("us"),
    "start_time": pl.Datetime("us"),
    "end_time": pl.Datetime("us"),
    "is_open": pl.Boolean(),
    "gpus": pl.Float64(),
    "gpu_model": pl.String(),
    "hosts": pl.String(),
    "elapsed_seconds": pl.Int64(),
    "gpu_hours": pl.Float64(),
    "utilization": pl.Float64(),
    "utilization_signal": pl.String(),
    "active_gpu_hours": pl.Float64(),
    "idle_gpu_hours": pl.Float64(),
    "zero_util_gpu_hours": pl.Float64(),
    "mean_gpu_util": pl.Float64(),
    "mean_gr_engine_active": pl.Float64(),
    "mean_sm_active": pl.Float64(),
    "mean_tensor_active": pl.Float64(),
    "peak_fb_used_mib": pl.Float64(),
    "mean_fb_used_mib": pl.Float64(),
    "energy_kwh": pl.Float64(),
    "queue_seconds": pl.Int64(),
    "submit_wait_seconds": pl.Int64(),
    "n_samples": pl.Int64(),
    "expected_samples": pl.Float64(),
    "sample_coverage": pl.Float64(),
    "attribution_method": pl.String(),
    "month": pl.Date(),
}

_MEAN_SIGNALS = ("gpu_util", "gr_engine_active", "sm_active", "tensor_active")
_SUMMED = [f"{signal}_{stat}" for signal in _MEAN_SIGNALS for stat in ("sum", "n")]


def _with_clipped_run(jobs: pl.DataFrame, period_start: datetime, period_end: datetime) -> pl.DataFrame:
    """``_clip_start``/``_clip_end`` (null if not started) and ``elapsed_seconds`` in the period."""
    clip_start = pl.max_horizontal(pl.col("start_time"), pl.lit(period_start))
    clip_end = pl.min_horizontal(pl.col("end_time").fill_null(period_end), pl.lit(period_end))
    started = pl.col("start_time").is_not_null()
    return jobs.with_columns(
        _clip_start=pl.when(started).then(clip_start),
        _clip_end=pl.when(started).then(clip_end),
    ).with_columns(
        elapsed_seconds=pl.max_horizontal(
            (pl.col("_clip_end") - pl.col("_clip_start")).dt.total_seconds(), pl.lit(0)
        ).fill_null(0)
    )


def _label_usage(runs: pl.DataFrame, hourly: pl.DataFrame) -> pl.DataFrame:
    """Per ``_run``: the hourly rows attributed by the hpc_job label, summed."""
    matched = runs.filter(pl.col("_clip_start").is_not_null()).select(
        "_run", "cluster", "job_id_raw", "_clip_start", "_clip_end"
    ).join(hourly, left_on=["cluster", "job_id_raw"], right_on=["cluster", "hpc_job"])
    in_run = (pl.col("hour") >= pl.col("_clip_start").dt.truncate("1h")) & (
        pl.col("hour") < pl.col("_clip_end")
    )
    energy = pl.col("energy_delta_mj")
    return (
        matched.filter(in_run)
        .group_by("_run")
        .agg(
            pl.col("n_samples").sum(),
            pl.col("zero_samples").sum(),
            *(pl.col(c).sum() for c in _SUMMED),
            pl.col("fb_used_mib_max").max().alias("peak_fb_used_mib"),
            pl.col("fb_used_mib_sum").sum(),
            pl.col("fb_used_mib_n").sum(),
            pl.when(energy.count() > 0).then(energy.sum()).alias("_energy_mj"),
        )
    )


def _utilization() -> list[pl.Expr]:
    """The best present signal's name and its sample-weighted mean."""
    signal = pl.lit(None, pl.String)
    value = pl.lit(None, pl.Float64)
    for name in reversed(BEST_SIGNAL_ORDER):
        present = pl.col(f"{name}_n") > 0
        signal = pl.when(present).then(pl.lit(name)).otherwise(signal)
        value = pl.when(present).then(pl.col(f"{name}_sum") / pl.col(f"{name}_n")).otherwise(value)
    return [signal.alias("utilization_signal"), value.alias("utilization")]


def _mean(name: str) -> pl.Expr:
    return pl.when(pl.col(f"{name}_n") > 0).then(pl.col(f"{name}_sum") / pl.col(f"{name}_n"))


def _with_usage_measures(frame: pl.DataFrame, step_seconds: int) -> pl.DataFrame:
    hours, n = pl.col("gpu_hours"), pl.col("n_samples")
    expected = pl.col("gpu_slots") * pl.col("elapsed_seconds") / step_seconds
    frame = frame.with_columns(*_utilization()).with_columns(
        active_gpu_hours=hours * pl.col("utilization"),
        zero_util_gpu_hours=pl.when(n > 0).then(hours * pl.col("zero_samples") / n),
        mean_gpu_util=_mean("gpu_util"),
        mean_gr_engine_active=_mean("gr_engine_active"),
        mean_sm_active=_mean("sm_active"),
        mean_tensor_active=_mean("tensor_active"),
        mean_fb_used_mib=_mean("fb_used_mib"),
        energy_kwh=pl.col("_energy_mj") / MJ_PER_KWH,
        expected_samples=expected,
        sample_coverage=pl.when(expected > 0).then(pl.min_horizontal(n / expected, pl.lit(1.0))),
        attribution_method=pl.when(n > 0).then(pl.lit("hpc_job_label")).otherwise(pl.lit("none")),
    )
    return frame.with_columns(idle_gpu_hours=hours - pl.col("active_gpu_hours"))


def _with_org(frame: pl.DataFrame, accounts: pl.DataFrame) -> pl.DataFrame:
    org = accounts.select("cluster", "account", "department", "division").unique(["cluster", "account"])
    return frame.join(org, on=["cluster", "account"], how="left", maintain_order="left").with_columns(
        pl.col("department").fill_null(UNMAPPED), pl.col("division").fill_null(UNMAPPED)
    )


def _with_gpu_model(frame: pl.DataFrame, gpu_models: pl.DataFrame) -> pl.DataFrame:
    """The hosts' models (comma-joined if several); MIG runs get `` <profile>`` appended."""
    per_run = (
        frame.select("_run", "cluster", pl.col("hosts").alias("hostname"))
        .explode("hostname")
        .join(gpu_models.unique(["cluster", "hostname"]), on=["cluster", "hostname"])
        .group_by("_run")
        .agg(pl.col("gpu_model").unique().sort().str.join(",").alias("_host_model"))
    )
    model = pl.col("_host_model")
    mig_model = pl.when(pl.col("gpu_type").is_not_null()).then(pl.format("{} {}", model, pl.col("gpu_type")))
    return frame.join(per_run, on="_run", how="left", maintain_order="left").with_columns(
        gpu_model=pl.when(pl.col("is_mig")).then(mig_model.otherwise(model)).otherwise(model)
    )


def fct_job_usage(
    jobs: pl.DataFrame,
    hourly: pl.DataFrame,
    accounts: pl.DataFrame,
    gpu_models: pl.DataFrame,
    period_start: datetime,
    period_end: datetime,
    step_seconds: int,
) -> pl.DataFrame:
    """fct_job_usage rows (SCHEMA) for stg_slurm__jobs runs in [period_start, period_end)."""
    runs = _with_clipped_run(
        jobs.filter(in_window(period_start, period_end)).with_row_index("_run"), period_start, period_end
    )
    usage = _label_usage(runs, hourly)
    frame = runs.join(usage, on="_run", how="left", maintain_order="left").with_columns(
        pl.col("n_samples", "zero_samples", *_SUMMED, "fb_used_mib_n").fill_null(0),
        gpu_hours=pl.col("gpus") * pl.col("elapsed_seconds") / 3600.0,
        queue_seconds=(pl.col("start_time") - pl.col("eligible_time")).dt.total_seconds(),
        submit_wait_seconds=(pl.col("start_time") - pl.col("submit_time")).dt.total_seconds(),
        month=pl.lit(period_start.date()),
    )
    frame = _with_usage_measures(frame, step_seconds)
    frame = _with_gpu_model(_with_org(frame, accounts), gpu_models)
    return frame.with_columns(hosts=pl.col("hosts").list.join(",")).select(list(SCHEMA)).cast(SCHEMA)
