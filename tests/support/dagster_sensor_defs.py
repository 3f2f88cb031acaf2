"""The cardhours code location with its monthly review sensor ticking every few seconds, for the
daemon test of the sensor (tests/integration/test_dagster_month_sensor.py).

The production sensor ticks at most every five minutes; a test waiting for three of its ticks
would wait a quarter of an hour. This location is the production one (the same assets, jobs,
schedules and resource) with the same sensor built with a shorter interval; on by default, as
in production, so the daemon ticks it without anyone starting it.
"""

from dagster import Definitions

import pipelines.definitions
from pipelines.review_sensor import build_review_sensor

SENSOR_INTERVAL_SECONDS = 10

production = pipelines.definitions.defs
defs = Definitions(
    assets=production.assets,
    jobs=production.jobs,
    schedules=production.schedules,
    sensors=[build_review_sensor(minimum_interval_seconds=SENSOR_INTERVAL_SECONDS)],
    resources=production.resources,
)
