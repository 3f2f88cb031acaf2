"""Monthly review marts: flags per job run and reason (+ ``YYYY-MM/flagged_jobs.csv``), per-user totals."""

from pathlib import Path

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    asset,
)

from cardhours.config.rates import price_frame
from cardhours.contracts.flags import FLAG_REASONS, REASONS, SEVERITIES
from pipelines.assets.marts import JOB_USAGE_KEY
from pipelines.partitions import monthly_partitions, naive_window
from pipelines.resources import CardhoursResource
from reports.flagged_jobs_csv import flagged_jobs_csv
from reports.write import write_atomic
from transforms.dated_cost import unpriced_models
from transforms.fct_job_flags import SCHEMA as FLAGS_SCHEMA
from transforms.fct_job_flags import fct_job_flags
from transforms.fct_job_usage import SCHEMA as USAGE_SCHEMA
from transforms.int_job_activity_profiled import int_job_activity_profiled
from transforms.mart_user_monthly import mart_user_monthly
from warehouse import read_frame, replace_partition

FLAGS_KEY = ["marts", "fct_job_flags"]
USER_KEY = ["marts", "mart_user_monthly"]
ATTRIBUTED_KEY = ["intermediate", "int_gpu_minutes_attributed"]
FLAGS_VALID = "flags_valid"
RUN = ["cluster", "job_id_raw", "start_time"]
USAGE_SQL = "SELECT * FROM marts.fct_job_usage WHERE month = ?"
# What int_job_activity_profiled reads of the attribution rows (job runs only).
ATTRIBUTED_SQL = """
SELECT cluster, job_id_raw, start_time, hour, attribution_method, samples, zero_samples,
       gr_engine_active_sum, gr_engine_active_n
FROM intermediate.int_gpu_minutes_attributed WHERE month = ? AND job_id_raw IS NOT NULL
"""


def _prices(cardhours: CardhoursResource, models: list[str | None], start, end) -> tuple[pl.DataFrame, list[str]]:
    """The list price segments of every configured model over the month (``rates.price_changes``
    applied, as in the chargeback), and the models of ``models`` without a price."""
    segments = price_frame(cardhours.config.rates, start, end).with_columns(pl.col("list_unit_price").cast(pl.Float64))
    return segments, unpriced_models(models, segments)


def _usage(conn, month) -> pl.DataFrame:
    return read_frame(conn, USAGE_SQL, [month]).select(list(USAGE_SCHEMA)).cast(USAGE_SCHEMA)


def write_flagged_jobs(text: str, reports_dir: Path, month: str) -> Path:
    """``<reports_dir>/YYYY-MM/flagged_jobs.csv``, replaced atomically."""
    return write_atomic(text, Path(reports_dir) / month / "flagged_jobs.csv")


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


@asset(
    key=FLAGS_KEY,
    partitions_def=monthly_partitions,
    group_name="marts",
    kinds={"duckdb", "polars", "csv"},
    deps=[AssetDep(JOB_USAGE_KEY), AssetDep(ATTRIBUTED_KEY)],
    check_specs=[AssetCheckSpec(FLAGS_VALID, asset=FLAGS_KEY, blocking=True)],
    description="One row per flagged job run and reason with severity, evidence and a recommendation; writes "
    "YYYY-MM/flagged_jobs.csv. Reasons: " + "; ".join(f"{r.code}: {r.summary}" for r in FLAG_REASONS) + ".",
)
def fct_job_flags_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    month = start.date()
    config = cardhours.config
    thresholds = config.flags
    with cardhours.warehouse() as conn:
        usage = _usage(conn, month)
        attributed = read_frame(conn, ATTRIBUTED_SQL, [month])
        profile = int_job_activity_profiled(
            attributed, usage, end, thresholds.input_bound_min_activity, thresholds.input_bound_max_activity
        )
        prices, unpriced = _prices(cardhours, usage.get_column("gpu_model").to_list(), start, end)
        flags = fct_job_flags(
            usage, profile, config.inventory_frame(), thresholds, prices, config.rates.currency, end, month
        )
        rows = replace_partition(conn, "marts.fct_job_flags", flags.cast(FLAGS_SCHEMA), {"month": month})
    path = write_flagged_jobs(flagged_jobs_csv(flags), config.reports.dir, start.strftime("%Y-%m"))
    if unpriced:
        context.log.warning(f"no GPU-hour rate for {unpriced}: their idle_cost is null")
    # runs with samples but no hourly attribution rows: IDLE_TAIL and INPUT_BOUND cannot judge them
    unprofiled = (
        usage.join(profile.filter(pl.col("measured_hours") > 0), on=RUN, how="anti")
        .filter(pl.col("n_samples") > 0)
        .height
    )
    if unprofiled:
        context.log.warning(
            f"{unprofiled} runs with samples have no rows in intermediate.int_gpu_minutes_attributed for "
            f"{month}: materialize it first (IDLE_TAIL and INPUT_BOUND skip those runs)"
        )
    by_reason = flags.get_column("reason").value_counts().sort("reason").rows()
    return MaterializeResult(
        metadata={
            "rows": rows,
            "month": str(month),
            "flagged_runs": flags.select("cluster", "job_id_raw", "start_time").n_unique() if rows else 0,
            "by_reason": MetadataValue.json({str(k): int(v) for k, v in by_reason}),
            "unpriced_models": MetadataValue.json(unpriced),
            "runs_without_hourly_profile": unprofiled,
            "csv": MetadataValue.path(str(path)),
        },
        check_results=[flags_valid_check(flags, usage)],
    )


@asset(
    key=USER_KEY,
    partitions_def=monthly_partitions,
    group_name="marts",
    kinds={"duckdb", "polars"},
    deps=[AssetDep(JOB_USAGE_KEY), AssetDep(FLAGS_KEY)],
    description="Per cluster, user and department: GPU-hours, utilization, idle cost, flagged jobs, wasted "
    "GPU-hours, zero-util over threshold and low efficiency.",
)
def mart_user_monthly_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    month = start.date()
    config = cardhours.config
    with cardhours.warehouse() as conn:
        usage = _usage(conn, month)
        flags = read_frame(conn, "SELECT * FROM marts.fct_job_flags WHERE month = ?", [month]).cast(FLAGS_SCHEMA)
        prices, _ = _prices(cardhours, usage.get_column("gpu_model").to_list(), start, end)
        users = mart_user_monthly(usage, flags, config.flags, prices, config.rates.currency, month)
        rows = replace_partition(conn, "marts.mart_user_monthly", users, {"month": month})
    return MaterializeResult(
        metadata={
            "rows": rows,
            "month": str(month),
            "users_zero_util_over_threshold": int(users.get_column("is_zero_util_over_threshold").sum()),
            "users_low_efficiency": int(users.get_column("is_low_efficiency").sum()),
        }
    )
