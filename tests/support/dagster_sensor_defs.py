"""The cardhours code location made quick enough for a whole month through the daemon, for the
daemon test of the monthly review sensor (tests/integration/test_dagster_month_sensor.py).

Two changes to the production location, both about time, neither about what is tested:

- the review sensor ticks every 10 s instead of at most every 5 min (the same sensor, built
  with a shorter interval; on by default as in production, so the daemon ticks it unasked);
- ``daily_ingest`` runs its steps in the run's own process. In production each step is a
  process of its own, and each spends ~7 s of CPU importing Dagster, polars and DuckDB: ~30 CPU
  seconds a day, a quarter of an hour of CPU for a month. tests/integration/test_dagster_service.py
  runs the production executor through the same daemon.
"""

from dagster import Definitions, EnvVar, in_process_executor

from pipelines.definitions import build_definitions
from pipelines.jobs import daily_job
from pipelines.review_sensor import SENSOR_NAME, build_review_sensor

SENSOR_INTERVAL_SECONDS = 10


def _quick() -> Definitions:
    production = build_definitions(EnvVar("CARDHOURS_CONFIG"), daily=daily_job(executor_def=in_process_executor))
    fast = build_review_sensor(minimum_interval_seconds=SENSOR_INTERVAL_SECONDS)
    return Definitions(
        assets=production.assets,
        jobs=production.jobs,
        schedules=production.schedules,
        sensors=[fast if sensor.name == SENSOR_NAME else sensor for sensor in production.sensors or []],
        resources=production.resources,
    )


defs = _quick()  # the one Definitions at module scope
