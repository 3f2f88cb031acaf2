"""Monthly outputs written under the reports directory: YYYY-MM/review.html and
YYYY-MM/departments/<dept>.html (rendered by the pure reports package from mart frames)."""

from datetime import date, datetime

import duckdb
import polars as pl
from dagster import MaterializeResult, MetadataValue

from config import Config
from config.rates import price_frame
from contracts.capacity_states import DOWNTIME_INTERVAL, STATES, state_column
from pipelines.data_quality import inventory_mismatches, month_coverage_gaps, quarantine_summary, runaway_runs
from pipelines.step import Step
from pipelines.table_asset import table_asset
from pipelines.tables import (
    CHARGEBACK_CLOSED_MONTHS,
    DOWNTIME_TABLES,
    FCT_CHARGEBACK_FOCUS,
    FCT_GPU_CAPACITY_SPLIT,
    FCT_GPU_HOURLY,
    FCT_JOB_FLAGS,
    FCT_JOB_USAGE,
    INT_GPU_INVENTORY_OBSERVED,
    MART_CHARGEBACK_RECONCILIATION,
    MART_CLUSTER_MONTHLY,
    MART_DEPARTMENT_MONTHLY,
    MART_KUBE_QUEUE_MONTHLY,
    MART_USER_MONTHLY,
    RAW_QUARANTINE,
    REVIEW_HTML,
    STG_SLURM__JOBS,
)
from reports import build_inputs, render_department_pages, render_review, write_department_pages, write_review
from reports.chargeback_section import chargeback_section
from reports.data import ReviewSettings, first_trend_month, next_month
from reports.sections.data_quality import data_quality_section
from reports.sections.downtime import downtime_section
from reports.sections.kube_queues import kube_queues_section
from warehouse import read_frame

# GPU model as fct_job_usage names it: MIG instances as "<model> <profile>".
_MODEL = "CASE WHEN gpu_i_profile IS NULL THEN gpu_model ELSE gpu_model || ' ' || gpu_i_profile END"
READS = {
    "clusters": "SELECT * FROM marts.mart_cluster_monthly WHERE month BETWEEN ? AND ? ORDER BY month, cluster",
    "departments": (
        "SELECT * FROM marts.mart_department_monthly WHERE month BETWEEN ? AND ? ORDER BY month, cluster, department"
    ),
    # 12 months at the grain the dated prices need: runs (held interval) and model x hour.
    "runs": """
        SELECT cluster, month, gpu_model, start_time, elapsed_seconds, gpu_hours, idle_gpu_hours
        FROM marts.fct_job_usage WHERE month BETWEEN ? AND ? ORDER BY month, cluster, job_id_raw, start_time""",
    "model_hours": f"""
        SELECT cluster, month, {_MODEL} AS gpu_model, hour, sum(capacity_seconds) AS capacity_seconds,
               sum(allocated_seconds) AS allocated_seconds
        FROM marts.fct_gpu_hourly WHERE month BETWEEN ? AND ? GROUP BY ALL ORDER BY month, cluster, gpu_model, hour""",
    "jobs": "SELECT * FROM marts.fct_job_usage WHERE month = ? ORDER BY cluster, job_id, start_time",
    "hourly": """
        SELECT cluster, hour, sum(capacity_seconds) AS capacity_seconds, sum(allocated_seconds) AS allocated_seconds,
               sum(active_seconds) AS active_seconds, sum(n_samples) AS n_samples,
               sum(expected_samples) AS expected_samples
        FROM marts.fct_gpu_hourly WHERE month = ? GROUP BY ALL ORDER BY cluster, hour""",
    "flags": "SELECT * FROM marts.fct_job_flags WHERE month = ? ORDER BY cluster, job_id, start_time, reason",
    "users": "SELECT * FROM marts.mart_user_monthly WHERE month = ? ORDER BY cluster, user_name, department",
    "reconciliation": "SELECT * FROM marts.mart_chargeback_reconciliation WHERE month = ? ORDER BY cluster",
    "focus": "SELECT * FROM marts.fct_chargeback_focus WHERE billing_month = ?",
    "closed": "SELECT * FROM marts.chargeback_closed_months WHERE billing_month BETWEEN ? AND ? ORDER BY billing_month",
    "kube_queues": "SELECT * FROM marts.mart_kube_queue_monthly WHERE month = ? ORDER BY cluster, queue_kind, queue",
    # 12 months of flagged runs and of the capacity split (the headline's change against last month)
    "flag_months": """
        SELECT cluster, month, department, sum(flagged_job_count) AS flagged_job_count,
               sum(wasted_gpu_hours) AS wasted_gpu_hours
        FROM marts.mart_user_monthly WHERE month BETWEEN ? AND ? GROUP BY ALL ORDER BY month, cluster, department""",
    "states": "SELECT cluster, month, sum(capacity_seconds) / 3600 AS capacity_gpu_hours, "
    + ", ".join(f"sum({state_column(state)}) / 3600 AS {state}_gpu_hours" for state in STATES)
    + " FROM marts.fct_gpu_capacity_split WHERE month BETWEEN ? AND ? GROUP BY ALL ORDER BY month, cluster",
}

# The downtime section: capacity per state (columns from the contract) and the month's intervals.
STATES_SQL = (
    "SELECT cluster, sum(capacity_seconds) / 3600 AS capacity_gpu_hours, "
    + ", ".join(f"sum({state}_seconds) / 3600 AS {state}_gpu_hours" for state in STATES)
    + " FROM marts.fct_gpu_capacity_split WHERE month = ? GROUP BY cluster ORDER BY cluster"
)
INTERVALS_SQL = " UNION ALL ".join(
    f"SELECT {', '.join(DOWNTIME_INTERVAL)} FROM {table.name} WHERE day >= ? AND day < ?" for table in DOWNTIME_TABLES
)


def read_downtime_frames(conn: duckdb.DuckDBPyConnection, month: date) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(capacity per state per cluster, the month's downtime intervals) for the downtime section."""
    states = read_frame(conn, STATES_SQL, [month])
    intervals = read_frame(conn, INTERVALS_SQL, [month, next_month(month)] * len(DOWNTIME_TABLES))
    return states, intervals.cast(DOWNTIME_INTERVAL)


def read_review_frames(conn: duckdb.DuckDBPyConnection, month: date) -> dict[str, pl.DataFrame]:
    """The frames of one review: 12 months of monthly marts (trends, previous month) and
    the month's jobs, hourly GPU totals, flags and users."""
    first = first_trend_month(month)
    windowed = ("clusters", "departments", "runs", "model_hours", "closed", "flag_months", "states")
    window = {name: [first, month] for name in windowed}
    return {name: read_frame(conn, sql, window.get(name, [month])) for name, sql in READS.items()}


def review_settings(config: Config, month: date) -> ReviewSettings:
    """The config values the pages use; the dated list prices of every configured model over
    the review's 12 months (the chargeback's price segments; the pages price MIG labels at
    their base model and name the models without a price); the site's page templates, if any."""
    start, end = (datetime.combine(d, datetime.min.time()) for d in (first_trend_month(month), next_month(month)))
    segments = price_frame(config.rates, start, end).with_columns(pl.col("list_unit_price").cast(pl.Float64))
    quotas = {name: float(gpus) for name, gpus in config.quotas.departments.items()} or None
    return ReviewSettings(
        currency=config.rates.currency,
        price_segments=segments,
        quotas=quotas,
        overcommit_ratio=config.quotas.overcommit_ratio,
        low_efficiency_gpu_hours=config.flags.low_efficiency_gpu_hours,
        low_efficiency_utilization=config.flags.low_efficiency_utilization,
        templates_dir=config.reports.templates_dir,
    )


@table_asset(
    REVIEW_HTML,
    reads=[
        # the marts of READS
        MART_CLUSTER_MONTHLY,
        MART_DEPARTMENT_MONTHLY,
        FCT_JOB_USAGE,
        FCT_GPU_HOURLY,
        FCT_JOB_FLAGS,
        MART_USER_MONTHLY,
        MART_CHARGEBACK_RECONCILIATION,
        FCT_CHARGEBACK_FOCUS,
        CHARGEBACK_CLOSED_MONTHS,
        MART_KUBE_QUEUE_MONTHLY,
        # the downtime section
        FCT_GPU_CAPACITY_SPLIT,
        *DOWNTIME_TABLES,
        # the data quality section
        RAW_QUARANTINE,
        STG_SLURM__JOBS,
        INT_GPU_INVENTORY_OBSERVED,
    ],
    kinds=["html", "plotly"],
    description="YYYY-MM/review.html for operations and YYYY-MM/departments/<dept>.html for managers "
    "(offline: plotly.js shared in <reports dir>/assets/); a rerun replaces them and removes pages of vanished "
    "departments.",
)
def review_html(step: Step) -> MaterializeResult:
    month, config = step.month, step.config
    frames = read_review_frames(step.store.conn, month)
    conn = step.store.conn
    mismatches = inventory_mismatches(conn, config, month)
    downtime = downtime_section(*read_downtime_frames(conn, month))
    quality = data_quality_section(
        quarantine_summary(conn, month), runaway_runs(conn, month), month_coverage_gaps(conn, month), mismatches
    )
    step.close()
    reconciliation, focus, queues = frames.pop("reconciliation"), frames.pop("focus"), frames.pop("kube_queues")
    closed = frames.pop("closed")
    settings = review_settings(config, month)
    inputs = build_inputs(month, str(step.cardhours.config_path), settings=settings, **frames)
    chargeback = chargeback_section(reconciliation, focus, month.strftime("%Y-%m"), settings.currency, closed)
    queue_section = kube_queues_section(queues)
    extra = [chargeback, *(s for s in (downtime, queue_section) if s is not None), quality]
    html = render_review(inputs, extra_sections=extra)
    pages = render_department_pages(inputs)
    key = month.strftime("%Y-%m")
    path = write_review(html, config.reports.dir, key)
    written = write_department_pages(pages, config.reports.dir, key)
    step.log.info(f"review written to {path} with {len(written)} department pages")
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(str(path)),
            "bytes": len(html.encode()),
            "department_pages": len(written),
            "jobs": frames["jobs"].height,
            "flag_rows": frames["flags"].height,
        }
    )
