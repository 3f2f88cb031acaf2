"""The monthly review schedule: the 1st of the month at ``[schedule] monthly_hour`` in
``[schedule] timezone``, running the previous UTC month.

The timezone comes from the config file, which is only known when a tick is evaluated (the
resource's ``CARDHOURS_CONFIG`` path is resolved then, never at import). So the schedule
ticks hourly in UTC on the 1st and 2nd (``ScheduleConfig`` keeps the configured hour after
03:30 UTC on the 1st, and any timezone's 1st ends before the 2nd ends in UTC) and each tick
asks the config whether it is the review hour; every other tick is a skip that says why.
The run key is the month, so a month is requested once however often the schedule ticks. A
month that a run launched after the month ended already builds (the monthly review sensor's,
pipelines/review_sensor.py, usually minutes after the last day landed) is not requested again.

No ``from __future__ import annotations`` here: Dagster reads the resource parameter's type.
"""

from datetime import UTC, date, datetime, time
from zoneinfo import ZoneInfo

from dagster import RunRequest, ScheduleEvaluationContext, SkipReason, schedule

from config.schedule import ScheduleConfig
from pipelines.jobs import monthly_review_job, review_month_key
from pipelines.resources import CardhoursResource
from pipelines.review_sensor import month_runs, prior_run
from warehouse.books.ledger import next_month

MONTHLY_REVIEW_CRON = "0 * 1,2 * *"


def review_tick(when: datetime, settings: ScheduleConfig) -> RunRequest | SkipReason:
    """What the tick at ``when`` (timezone-aware) does under these settings."""
    local = when.astimezone(ZoneInfo(settings.timezone))
    if local.day != 1 or local.hour != settings.monthly_hour:
        return SkipReason(
            f"the review runs on the 1st at {settings.monthly_hour:02d}:00 {settings.timezone}; "
            f"this tick is {local:%Y-%m-%d %H:%M} there"
        )
    key = review_month_key(when)
    if key is None:
        return SkipReason(f"no monthly partition before {when:%Y-%m}")
    return RunRequest(run_key=key, partition_key=key)


@schedule(
    name="monthly_review_schedule",
    cron_schedule=MONTHLY_REVIEW_CRON,
    execution_timezone="UTC",
    job=monthly_review_job,
    description="The previous UTC month's marts and reports, on the 1st at the config's [schedule] hour and timezone.",
)
def monthly_review_schedule(context: ScheduleEvaluationContext, cardhours: CardhoursResource):
    when = context.scheduled_execution_time or datetime.now(UTC)
    result = review_tick(when, cardhours.config.schedule)
    if isinstance(result, RunRequest) and result.partition_key:
        ended = datetime.combine(next_month(date.fromisoformat(result.partition_key)), time())
        built = prior_run(result, month_runs(context.instance, result.partition_key, ended))
        return SkipReason(built) if built else result
    return result
