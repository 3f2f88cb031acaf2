"""marts.fct_job_usage: one row per job run in a period, with its GPU hours and how busy they were.

GPU hours are clipped to [period_start, period_end) to the second: a run crossing the
boundary counts only its inside part in each period; a run with no end counts up to
period_end.

Samples come from ``int_gpu_minutes_attributed`` (per minute: by the ``hpc_job`` label, else
by host and time, exclusive or shared by GPU count), summed per run (cluster, job_id_raw,
start_time). ``attribution_method`` is the run's best method among its samples
(hpc_job_label > host_exclusive > host_shared), ``none`` without samples.

Utilization is the sample-weighted mean of the best activity signal present among the
run's samples (sm_active, else gr_engine_active, else gpu_util); it is null without
samples, and so are active/idle GPU hours. Energy is mean power x sampled time.

Kubernetes jobs (``scheduler = 'kubernetes'``, from stg_kube__jobs and stg_kube__pods; see
transforms/marts/job_usage_kube.py) are runs beside the Slurm ones: their samples come by the
pod label (``pod_label``, ``pod_shared``), GPU hours are the pods' GPU-seconds clipped to the
period, less the samples split off to other pods on time-sliced GPUs (x step x GPUs per
slot), queue time is the staged created -> (last pod) scheduled.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from contracts.jobs import ARRAY_AND_HET, JOB_IDS, ORG, OWNER, QUEUE, TIMES
from contracts.signals import BEST_SIGNAL_ORDER
from transforms.intermediate.int_gpu_minutes_attributed import ATTRIBUTED_METHODS
from transforms.marts.job_usage_kube import is_kube, kube_gpu_hours, kube_runs
from transforms.staging.stg_slurm__jobs import in_window

UNMAPPED = "unmapped"
J_PER_KWH = 3.6e6

SCHEMA: dict[str, pl.DataType] = {
    **JOB_IDS,
    **ARRAY_AND_HET,
    **OWNER,
    **ORG,
    **QUEUE,
    "state": pl.String(),
    **TIMES,
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
RUN = ["cluster", "job_id_raw", "start_time"]
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


def _run_usage(attributed: pl.DataFrame) -> pl.DataFrame:
    """Per run (cluster, job_id_raw, start_time): the attributed sums and the best method."""
    rank = {method: i for i, method in enumerate(ATTRIBUTED_METHODS)}
    return (
        attributed.filter(pl.col("attribution_method").is_in(ATTRIBUTED_METHODS))
        .with_columns(_method_rank=pl.col("attribution_method").replace_strict(rank, return_dtype=pl.Int32))
        .group_by(RUN)
        .agg(
            pl.col("samples").sum().alias("_samples"),
            pl.col("zero_samples").sum(),
            *(pl.col(c).sum() for c in _SUMMED),
            pl.col("fb_used_mib_max").max().alias("peak_fb_used_mib"),
            pl.col("fb_used_mib_sum").sum(),
            pl.col("fb_used_mib_n").sum(),
            pl.col("energy_j").sum().alias("_energy_j"),
            pl.col("split_off_samples").sum().alias("_split_off_samples"),
            pl.col("attribution_method").sort_by("_method_rank").first(),
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
    expected = (
        pl.when(is_kube())
        .then(pl.col("_slot_seconds") / step_seconds)
        .otherwise(pl.col("gpu_slots") * pl.col("elapsed_seconds") / step_seconds)
    )
    frame = frame.with_columns(*_utilization()).with_columns(
        active_gpu_hours=hours * pl.col("utilization"),
        zero_util_gpu_hours=pl.when(pl.col("_samples") > 0).then(hours * pl.col("zero_samples") / pl.col("_samples")),
        mean_gpu_util=_mean("gpu_util"),
        mean_gr_engine_active=_mean("gr_engine_active"),
        mean_sm_active=_mean("sm_active"),
        mean_tensor_active=_mean("tensor_active"),
        mean_fb_used_mib=_mean("fb_used_mib"),
        energy_kwh=pl.col("_energy_j") / J_PER_KWH,
        expected_samples=expected,
        sample_coverage=pl.when(expected > 0).then(pl.min_horizontal(n / expected, pl.lit(1.0))),
        attribution_method=pl.when(n > 0).then(pl.col("attribution_method")).otherwise(pl.lit("none")),
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
    attributed: pl.DataFrame,
    accounts: pl.DataFrame,
    gpu_models: pl.DataFrame,
    period_start: datetime,
    period_end: datetime,
    step_seconds: int,
    kube_jobs: pl.DataFrame | None = None,
    kube_pods: pl.DataFrame | None = None,
    divisions: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """fct_job_usage rows (SCHEMA) for stg_slurm__jobs runs in [period_start, period_end),
    then the stg_kube__jobs ones (``kube_pods``: their stg_kube__pods rows; ``divisions``:
    department -> division) when given.

    ``attributed``: int_gpu_minutes_attributed rows (its SCHEMA) of the same period.
    """
    window = in_window(period_start, period_end)
    runs = _with_org(jobs.filter(window), accounts).with_columns(
        queue_seconds=(pl.col("start_time") - pl.col("eligible_time")).dt.total_seconds()
    )
    if kube_jobs is not None and kube_jobs.height:
        if kube_pods is None or divisions is None:
            raise ValueError("kube_jobs needs kube_pods and divisions")
        kube = kube_runs(kube_jobs.filter(window), kube_pods, divisions, period_start, period_end)
        runs = pl.concat([runs, kube], how="diagonal_relaxed")
    runs = _with_clipped_run(runs.with_row_index("_run"), period_start, period_end)
    in_period = (pl.col("hour") >= period_start) & (pl.col("hour") < period_end)
    usage = _run_usage(attributed.filter(in_period))
    frame = runs.join(usage, on=RUN, how="left", maintain_order="left").with_columns(
        pl.col("_samples", "zero_samples", *_SUMMED, "fb_used_mib_n").fill_null(0.0),
        n_samples=pl.col("_samples").fill_null(0.0).round().cast(pl.Int64),
        submit_wait_seconds=(pl.col("start_time") - pl.col("submit_time")).dt.total_seconds(),
        month=pl.lit(period_start.date()),
    )
    frame = frame.with_columns(pl.col("elapsed_seconds").cast(pl.Int64))
    if "_gpu_seconds" not in frame.columns:
        frame = frame.with_columns(_gpu_seconds=pl.lit(None, pl.Float64), _slot_seconds=pl.lit(None, pl.Float64))
    gpu_hours = (
        pl.when(is_kube())
        .then(kube_gpu_hours(step_seconds))
        .otherwise(pl.col("gpus") * pl.col("elapsed_seconds") / 3600.0)
    )
    frame = _with_usage_measures(frame.with_columns(gpu_hours=gpu_hours), step_seconds)
    frame = _with_gpu_model(frame, gpu_models)
    return frame.with_columns(hosts=pl.col("hosts").list.join(",")).select(list(SCHEMA)).cast(SCHEMA)
