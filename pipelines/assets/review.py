"""Monthly review marts: flags per job run and reason (+ ``YYYY-MM/flagged_jobs.csv``), per-user totals."""

from pathlib import Path

import polars as pl
from dagster import AssetCheckResult, MetadataValue

from config.rates import price_frame
from contracts.dated_cost import unpriced_models
from contracts.flags import FLAG_REASONS, REASONS, SEVERITIES
from pipelines.assets.capacity_split import month_intervals, require_downtime_days
from pipelines.step import Step
from pipelines.table_asset import Built, Check, table_asset
from pipelines.tables import (
    DOWNTIME_TABLES,
    FCT_JOB_FLAGS,
    FCT_JOB_USAGE,
    INT_GPU_MINUTES_ATTRIBUTED,
    MART_USER_MONTHLY,
)
from reports.flagged_jobs_csv import FLAGGED_JOBS_CSV, flagged_jobs_csv
from reports.write import write_atomic
from transforms.marts.fct_job_flags import SCHEMA as FLAGS_SCHEMA
from transforms.marts.fct_job_flags import fct_job_flags
from transforms.marts.fct_job_usage import SCHEMA as USAGE_SCHEMA
from transforms.marts.job_activity_profile import int_job_activity_profiled
from transforms.marts.mart_user_monthly import mart_user_monthly

FLAGS_VALID = "flags_valid"
RUN = ["cluster", "job_id_raw", "start_time"]
# What int_job_activity_profiled reads of the attribution rows (job runs only).
PROFILED_COLUMNS = (
    "cluster, job_id_raw, start_time, hour, attribution_method, samples, zero_samples, "
    "gr_engine_active_sum, gr_engine_active_n"
)


def _prices(step: Step, models: list[str | None]) -> tuple[pl.DataFrame, list[str]]:
    """The list price segments of every configured model over the month (``rates.price_changes``
    applied, as in the chargeback), and the models of ``models`` without a price."""
    segments = price_frame(step.config.rates, step.start, step.end)
    segments = segments.with_columns(pl.col("list_unit_price").cast(pl.Float64))
    return segments, unpriced_models(models, segments)


def _usage(step: Step) -> pl.DataFrame:
    return step.read(FCT_JOB_USAGE).select(list(USAGE_SCHEMA)).cast(USAGE_SCHEMA)


def write_flagged_jobs(text: str, reports_dir: Path, month: str) -> Path:
    """``<reports_dir>/YYYY-MM/flagged_jobs.csv``, replaced atomically."""
    return write_atomic(text, Path(reports_dir) / month / FLAGGED_JOBS_CSV)


def flags_valid_check(flags: pl.DataFrame, usage: pl.DataFrame) -> AssetCheckResult:
    """Known reasons and severities, each flagged run in fct_job_usage, waste within its GPU-hours."""
    problems = []
    bad_codes = flags.filter(~pl.col("reason").is_in(REASONS) | ~pl.col("severity").is_in(SEVERITIES)).height
    if bad_codes:
        problems.append(f"{bad_codes} rows with an unknown reason or severity")
    orphans = flags.join(usage.select(RUN), on=RUN, how="anti", nulls_equal=True).height
    if orphans:
        problems.append(f"{orphans} rows of runs not in fct_job_usage")
    over = flags.filter(pl.col("wasted_gpu_hours") > pl.col("gpu_hours") * (1 + 1e-9) + 1e-9).height
    if over:
        problems.append(f"{over} rows wasting more than the job's GPU-hours")
    return AssetCheckResult(check_name=FLAGS_VALID, passed=not problems, description="; ".join(problems) or None)


@table_asset(
    FCT_JOB_FLAGS,
    reads=[FCT_JOB_USAGE, INT_GPU_MINUTES_ATTRIBUTED, *DOWNTIME_TABLES],
    kinds=["polars", "csv"],
    checks=[Check(FLAGS_VALID)],
    description="One row per flagged job run and reason with severity, evidence and a recommendation; writes "
    "YYYY-MM/flagged_jobs.csv. Reasons: " + "; ".join(f"{r.code}: {r.summary}" for r in FLAG_REASONS) + ".",
)
def fct_job_flags_asset(step: Step) -> Built:
    config, thresholds, month = step.config, step.config.flags, step.month
    usage = _usage(step)
    attributed = step.read(INT_GPU_MINUTES_ATTRIBUTED, columns=PROFILED_COLUMNS, where="job_id_raw IS NOT NULL")
    profile = int_job_activity_profiled(
        attributed, usage, step.end, thresholds.input_bound_min_activity, thresholds.input_bound_max_activity
    )
    prices, unpriced = _prices(step, usage.get_column("gpu_model").to_list())
    require_downtime_days(step)  # hosts out of service are not free for MULTINODE_FRAGMENTED
    flags = fct_job_flags(
        usage,
        profile,
        config.inventory_frame(),
        thresholds,
        prices,
        config.rates.currency,
        step.end,
        month,
        downtime=month_intervals(step),
    )
    path = write_flagged_jobs(flagged_jobs_csv(flags), config.reports.dir, step.start.strftime("%Y-%m"))
    if unpriced:
        step.log.warning(f"no GPU-hour rate for {unpriced}: their idle_cost is null")
    # runs with samples but no hourly attribution rows: IDLE_TAIL and INPUT_BOUND cannot judge them
    unprofiled = (
        usage.join(profile.filter(pl.col("measured_hours") > 0), on=RUN, how="anti")
        .filter(pl.col("n_samples") > 0)
        .height
    )
    if unprofiled:
        step.log.warning(
            f"{unprofiled} runs with samples have no rows in intermediate.int_gpu_minutes_attributed for "
            f"{month}: materialize it first (IDLE_TAIL and INPUT_BOUND skip those runs)"
        )
    by_reason = flags.get_column("reason").value_counts().sort("reason").rows()
    return Built(
        flags.cast(FLAGS_SCHEMA),
        metadata={
            "flagged_runs": flags.select("cluster", "job_id_raw", "start_time").n_unique() if flags.height else 0,
            "by_reason": MetadataValue.json({str(k): int(v) for k, v in by_reason}),
            "unpriced_models": MetadataValue.json(unpriced),
            "runs_without_hourly_profile": unprofiled,
            "csv": MetadataValue.path(str(path)),
        },
        checks=[flags_valid_check(flags, usage)],
    )


@table_asset(
    MART_USER_MONTHLY,
    reads=[FCT_JOB_USAGE, FCT_JOB_FLAGS],
    kinds=["polars"],
    description="Per cluster, user and department: GPU-hours, utilization, idle cost, flagged jobs, wasted "
    "GPU-hours, zero-util over threshold and low efficiency.",
)
def mart_user_monthly_asset(step: Step) -> Built:
    config = step.config
    usage = _usage(step)
    flags = step.read(FCT_JOB_FLAGS).cast(FLAGS_SCHEMA)
    prices, _ = _prices(step, usage.get_column("gpu_model").to_list())
    users = mart_user_monthly(usage, flags, config.flags, prices, config.rates.currency, step.month)
    return Built(
        users,
        metadata={
            "users_zero_util_over_threshold": int(users.get_column("is_zero_util_over_threshold").sum()),
            "users_low_efficiency": int(users.get_column("is_low_efficiency").sum()),
        },
    )
