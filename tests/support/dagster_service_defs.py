"""The cardhours code location plus one schedule that is due every minute, for the daemon test.

The production daily schedule ticks once a day at 02:30 UTC, and the daemon only fires ticks
that fall after a schedule was started, so a test cannot wait for it. ``minutely_daily_ingest``
targets the same ``daily_ingest`` job, is due at every minute boundary, and requests the one day
named by ``CARDHOURS_TEST_SCHEDULED_DAY`` once: later ticks skip when the instance already holds a
run of this schedule (a schedule's run key deduplicates only within one tick, not across ticks).
"""

import os

from dagster import Definitions, RunRequest, RunsFilter, ScheduleEvaluationContext, SkipReason, schedule

import pipelines.definitions

SCHEDULE_NAME = "minutely_daily_ingest"


@schedule(name=SCHEDULE_NAME, cron_schedule="* * * * *", execution_timezone="UTC", job_name="daily_ingest")
def minutely_daily_ingest(context: ScheduleEvaluationContext) -> RunRequest | SkipReason:
    day = os.environ["CARDHOURS_TEST_SCHEDULED_DAY"]
    if context.instance.get_runs_count(RunsFilter(tags={"dagster/schedule_name": SCHEDULE_NAME})):
        return SkipReason(f"the run of {day} was requested by an earlier tick")
    return RunRequest(run_key=day, partition_key=day)


defs = Definitions.merge(pipelines.definitions.defs, Definitions(schedules=[minutely_daily_ingest]))
