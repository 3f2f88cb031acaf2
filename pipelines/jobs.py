"""Jobs and schedules: a daily ingest after each UTC day, and the monthly review on the 1st."""

from __future__ import annotations

from dagster import AssetSelection, build_schedule_from_partitioned_job, define_asset_job


DAILY_GROUPS = AssetSelection.assets(
    ["raw", "dcgm_samples"],
    ["raw", "slurm_sacct"],
    ["staging", "stg_dcgm__gpu_hourly"],
    ["staging", "stg_dcgm__gpu_minutely"],
    ["staging", "stg_dcgm__field_presence"],
)
MONTHLY_GROUPS = AssetSelection.groups("marts", "reports") | AssetSelection.assets(["staging", "stg_slurm__jobs"])

daily_ingest_job = define_asset_job(
    "daily_ingest",
    selection=DAILY_GROUPS,
    description="Land one UTC day of DCGM samples and sacct rows; roll the samples up per hour and minute; record field presence.",
)

monthly_review_job = define_asset_job(
    "monthly_review",
    selection=MONTHLY_GROUPS,
    description="Build the month's job runs, marts and reports from the landed days.",
)

# 02:30 UTC: the previous day is complete in Prometheus and in slurmdbd.
daily_ingest_schedule = build_schedule_from_partitioned_job(daily_ingest_job, hour_of_day=2, minute_of_hour=30)
# The 1st of the month 06:00 UTC, after the last day's ingest: ready for the review meeting.
monthly_review_schedule = build_schedule_from_partitioned_job(monthly_review_job, day_of_month=1, hour_of_day=6)
