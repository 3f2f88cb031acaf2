"""Jobs and schedules: a daily ingest after each UTC day, and the monthly review on the 1st.

Both jobs run every step in the run's own process (``in_process_executor``): the run holds the
warehouse lock from its first step to its last (pipelines/resources.py), so a ``cardhours close``
can never slip in between two steps of a run."""

from __future__ import annotations

from datetime import UTC, datetime

from dagster import AssetSelection, build_schedule_from_partitioned_job, define_asset_job, in_process_executor

from cardhours.config.schedule import DAILY_INGEST_UTC
from pipelines.assets.gate import GATE_KEY
from pipelines.partitions import PARTITIONS_START

DAILY_GROUPS = AssetSelection.assets(
    ["raw", "dcgm_samples"],
    ["raw", "slurm_sacct"],
    ["staging", "stg_dcgm__gpu_hourly"],
    ["staging", "stg_dcgm__gpu_minutely"],
    ["staging", "stg_dcgm__field_presence"],
    ["raw", "kube_series"],
)
MONTHLY_GROUPS = AssetSelection.groups("marts", "reports", "chargeback") | AssetSelection.assets(
    ["staging", "stg_slurm__jobs"],
    ["intermediate", "int_gpu_minutes_attributed"],
    ["staging", "stg_kube__pods"],
    ["staging", "stg_kube__jobs"],
    GATE_KEY,
)

daily_ingest_job = define_asset_job(
    "daily_ingest",
    selection=DAILY_GROUPS,
    description="Land one UTC day of DCGM samples and sacct rows; roll the samples up per hour and minute; "
    "record field presence.",
    executor_def=in_process_executor,
)

monthly_review_job = define_asset_job(
    "monthly_review",
    selection=MONTHLY_GROUPS,
    description="Build the month's job runs, marts and reports from the landed days (refused when a day is missing).",
    executor_def=in_process_executor,
)

# 02:30 UTC: the previous day is complete in Prometheus and in slurmdbd.
daily_ingest_schedule = build_schedule_from_partitioned_job(
    daily_ingest_job, hour_of_day=DAILY_INGEST_UTC.hour, minute_of_hour=DAILY_INGEST_UTC.minute
)


def review_month_key(execution_time: datetime) -> str | None:
    """The monthly partition a tick at ``execution_time`` runs: the UTC month before the
    tick's UTC month (``ScheduleConfig`` keeps ticks after that month's last ingest)."""
    utc = execution_time.astimezone(UTC) if execution_time.tzinfo else execution_time
    year, month = (utc.year, utc.month - 1) if utc.month > 1 else (utc.year - 1, 12)
    key = f"{year:04d}-{month:02d}-01"
    return key if key >= PARTITIONS_START else None
