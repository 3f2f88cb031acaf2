"""Jobs and schedules: a daily ingest after each UTC day, and the monthly review on the 1st.

The daily job's assets read and write the lake only (pipelines/store.py): it runs on Dagster's
default executor (each step in its own process, sibling steps in parallel; pipelines/
celery_definitions.py builds the same job on Celery workers), and any number of day partitions
may run at once. The monthly job is the one writer of the DuckDB file: it runs
every step in the run's own process (``in_process_executor``) and holds the warehouse lock from
its first step to its last (pipelines/resources.py), so a ``cardhours close`` can never slip in
between two of its steps; its runs carry the ``WAREHOUSE_WRITER`` tag, which the instance's
run queue (dagster.yaml ``tag_concurrency_limits``) lets run one at a time."""

from __future__ import annotations

from datetime import UTC, datetime

from dagster import (
    AssetSelection,
    ExecutorDefinition,
    ScheduleDefinition,
    build_schedule_from_partitioned_job,
    define_asset_job,
    in_process_executor,
)

from config.schedule import DAILY_INGEST_UTC
from pipelines.partitions import PARTITIONS_START
from pipelines.tables import DAY, MONTH, asset_keys

WAREHOUSE_WRITER = {"cardhours/warehouse": "writer"}  # runs that write the DuckDB file: one at a time
LAKE_ONLY = {"cardhours/storage": "lake"}  # runs of a daily job: they never open the DuckDB file
DAILY_GROUPS = AssetSelection.assets(*asset_keys(DAY))  # every daily asset: the landings and their rollups
MONTHLY_GROUPS = AssetSelection.assets(*asset_keys(MONTH))  # every monthly asset, from the gate to the reports

DAILY_JOB = "daily_ingest"
DAILY_CELERY_JOB = "daily_ingest_celery"  # the same assets, steps on Celery workers (pipelines/celery_definitions.py)


def daily_job(name: str = DAILY_JOB, executor_def: ExecutorDefinition | None = None):
    """The daily assets as a job named ``name``, its steps run by ``executor_def`` (default:
    Dagster's multiprocess executor, each step a process on this host). Its runs carry the
    ``LAKE_ONLY`` tag: they never take the warehouse lock (pipelines/resources.py)."""
    return define_asset_job(
        name,
        selection=DAILY_GROUPS,
        description="Land one UTC day of DCGM samples and sacct rows; roll the samples up per hour and minute; "
        "record field presence.",
        executor_def=executor_def,
        tags=LAKE_ONLY,
    )


daily_ingest_job = daily_job()

monthly_review_job = define_asset_job(
    "monthly_review",
    selection=MONTHLY_GROUPS,
    description="Build the month's job runs, marts and reports from the landed days (refused when a day is missing).",
    executor_def=in_process_executor,
    tags=WAREHOUSE_WRITER,
)


def daily_schedule(job) -> ScheduleDefinition:
    """``job`` (a daily job) at 02:30 UTC for the day before: by then the day is complete in
    Prometheus and in slurmdbd."""
    return build_schedule_from_partitioned_job(
        job, hour_of_day=DAILY_INGEST_UTC.hour, minute_of_hour=DAILY_INGEST_UTC.minute
    )


def review_month_key(execution_time: datetime) -> str | None:
    """The monthly partition a tick at ``execution_time`` runs: the UTC month before the
    tick's UTC month (``ScheduleConfig`` keeps ticks after that month's last ingest)."""
    utc = execution_time.astimezone(UTC) if execution_time.tzinfo else execution_time
    year, month = (utc.year, utc.month - 1) if utc.month > 1 else (utc.year - 1, 12)
    key = f"{year:04d}-{month:02d}-01"
    return key if key >= PARTITIONS_START else None
