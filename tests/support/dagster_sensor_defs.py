"""The cardhours code location made quick enough for a whole month through the daemon, for the
daemon test of the monthly review sensor (tests/integration/test_dagster_month_sensor.py).

Two changes to the production location, both about time, neither about what is tested:

- the review sensor ticks every 10 s instead of at most every 5 min (the same sensor, built
  with a shorter interval; on by default as in production, so the daemon ticks it unasked);
- ``daily_ingest`` runs its steps in the run's own process. In production each step is a
  process of its own, and each spends ~7 s of CPU importing Dagster, polars and DuckDB: ~30 CPU
  seconds a day, a quarter of an hour of CPU for a month. tests/integration/test_dagster_service.py
  runs the production executor through the same daemon.

The production daily schedule targets the production job, so it is left out (schedules are off
by default and this test does not start them).
"""

from dagster import Definitions, define_asset_job, in_process_executor

import pipelines.definitions
from pipelines.jobs import DAILY_GROUPS, DAILY_JOB, monthly_review_job
from pipelines.review_sensor import build_review_sensor
from pipelines.schedules import monthly_review_schedule

SENSOR_INTERVAL_SECONDS = 10


def _quick(production: Definitions) -> Definitions:
    return Definitions(
        assets=production.assets,
        jobs=[
            define_asset_job(DAILY_JOB, selection=DAILY_GROUPS, executor_def=in_process_executor),
            monthly_review_job,
        ],
        schedules=[monthly_review_schedule],
        sensors=[build_review_sensor(minimum_interval_seconds=SENSOR_INTERVAL_SECONDS)],
        resources=production.resources,
    )


defs = _quick(pipelines.definitions.defs)  # the one Definitions at module scope
