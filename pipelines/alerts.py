"""Failure alerts: a failed run, and a cluster whose daily ingest has stopped landing.

Both sensors are on by default and do nothing without an ``[alerts]`` section (each tick then
skips, saying so). They send through reports/alert_send.py: e-mail via ``[smtp]`` and,
optionally, a chat webhook.

- ``cardhours_run_failure_alert`` (a run-failure sensor): for every failed run of this code
  location, one alert naming the job, the partition, each failed step and the first line of
  its error. Dagster evaluates it once per failed run, so a failure is told once.
- ``cardhours_ingest_freshness`` (hourly): every configured cluster's sources (dcgm, and sacct
  or kube where configured) must have landed a day successfully within ``[alerts]
  freshness_hours``. It reads the landings straight from the lake (never the DuckDB file, which
  the monthly job may hold). A stale source is told once per episode: the cursor keeps what was
  told, and a source is told again only after it landed and went stale anew. A source that
  never landed is told only once the sensor itself has been running for ``freshness_hours``, so
  a new deployment is not alerted before its first ingest could run.

No ``from __future__ import annotations`` here: Dagster reads the resource parameter's type.
"""

import json
import os
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from dagster import (
    DefaultSensorStatus,
    RunFailureSensorContext,
    SensorEvaluationContext,
    SkipReason,
    run_failure_sensor,
    sensor,
)

from pipelines.errors import error_text
from pipelines.landing import utc_now
from pipelines.resources import CardhoursResource
from pipelines.store import open_lake
from reports.alert_send import deliver
from reports.alert_text import FailedStep, first_line, run_failure, stale_landings
from warehouse.books.landings import Stale, expected_sources, stale_sources
from warehouse.landings import newest_landings

if TYPE_CHECKING:
    from dagster._utils.error import SerializableErrorInfo  # the type of a failure event's error

NO_ALERTS = "no [alerts] section in the config: nothing is sent"


@run_failure_sensor(
    name="cardhours_run_failure_alert",
    default_status=DefaultSensorStatus.RUNNING,
    description="E-mails [alerts] recipients (and posts to the webhook) when a run fails: job, partition, "
    "failed steps and the first line of each error.",
)
def run_failure_alert(context: RunFailureSensorContext, cardhours: CardhoursResource) -> SkipReason | None:
    config = cardhours.config
    if config.alerts is None:
        return SkipReason(NO_ALERTS)
    run = context.dagster_run
    steps = [
        FailedStep(event.step_key or "(unknown step)", first_line(_user_error(event.event_specific_data.error)))
        for event in context.get_step_failure_events()
    ]
    url = f"{config.alerts.ui_url}/runs/{run.run_id}" if config.alerts.ui_url else None
    alert = run_failure(
        run.job_name,
        run.run_id,
        run.tags.get("dagster/partition"),
        steps,
        first_line(context.failure_event.message or ""),
        url,
    )
    sent = deliver(alert, config.alerts, config.smtp, os.environ)
    context.log.info(f"alert {alert.subject!r} sent: {'; '.join(sent)}")
    return None


def _user_error(error: "SerializableErrorInfo | None") -> str:
    return error_text(error) if error is not None else ""


@sensor(
    name="cardhours_ingest_freshness",
    minimum_interval_seconds=3600,
    default_status=DefaultSensorStatus.RUNNING,
    description="Alerts when a cluster's source has not landed a day successfully for [alerts] freshness_hours.",
)
def ingest_freshness(context: SensorEvaluationContext, cardhours: CardhoursResource) -> SkipReason:
    config = cardhours.config
    if config.alerts is None:
        return SkipReason(NO_ALERTS)
    now, hours = utc_now(), config.alerts.freshness_hours
    cursor = json.loads(context.cursor) if context.cursor else {}
    watching_since = datetime.fromisoformat(cursor.get("since", now.isoformat()))
    conn = open_lake(config)
    try:
        newest = newest_landings(conn)
    finally:
        conn.close()
    stale = stale_sources(newest, expected_sources(config), now - timedelta(hours=hours))
    if now - watching_since < timedelta(hours=hours):
        stale = [item for item in stale if item.newest is not None]
    told = cursor.get("told", {})
    new = [item for item in stale if told.get(_key(item)) != str(item.newest)]
    if new:
        sent = deliver(stale_landings(new, hours, now), config.alerts, config.smtp, os.environ)
        context.log.info(f"freshness alert sent: {'; '.join(sent)}")
    context.update_cursor(
        json.dumps({"since": watching_since.isoformat(), "told": {_key(item): str(item.newest) for item in stale}})
    )
    if new:
        return SkipReason(f"alerted: {', '.join(_key(item) for item in new)}")
    if stale:
        return SkipReason(f"still stale, already alerted: {', '.join(_key(item) for item in stale)}")
    return SkipReason(f"every cluster's sources landed within {hours} h")


def _key(item: Stale) -> str:
    return f"{item.cluster}/{item.source}"
