"""The monthly review sensor: build a month as soon as all its days have landed.

Each tick looks at the current UTC month and the ``LOOKBACK_MONTHS`` before it (never before the
partitions' start), newest first. A month is requested (``monthly_review``, its partition) when

- it has ended (UTC), and
- every day of it landed ('ok', or a 'gap' the source answered with nothing) for every source each
  configured cluster has (``ClusterConfig.sources``): the same
  ``landing_gaps`` the monthly job's gate asks (warehouse/books/landings.py), on landings read
  from the lake's files (warehouse/landing_scan.py: no DuckDB file, no warehouse lock, so a
  monthly run holding both never delays a tick), and
- no ``monthly_review`` run of that month was created after its newest landing, except failed
  or canceled ones not requested by this sensor (a build launched by hand, by the schedule or by
  an earlier tick already covers those landings).

The run key is ``<YYYY-MM> landed <newest landed_at>``: a re-landed day (a correction) gives a
new key and one rebuild; repeated ticks give the same key, which Dagster never runs twice. A
month that is not requested gets one line of the tick's skip reason: not ended, which cluster,
source and days are missing or failed, or which run already builds it.

Bounded work per tick: at most ``LOOKBACK_MONTHS`` months' landing files (one small file per
cluster, source and day) and one run query per complete month. Older months are rebuilt by hand
(a ``monthly_review`` backfill, or ``cardhours run --month``).

No ``from __future__ import annotations`` here: Dagster reads the resource parameter's type.
"""

from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, time
from functools import partial
from pathlib import Path

import polars as pl
from dagster import (
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)
from dagster._core.storage.tags import PARTITION_NAME_TAG, RUN_KEY_TAG

from pipelines.jobs import monthly_review_job
from pipelines.partitions import PARTITIONS_START
from pipelines.resources import CardhoursResource
from warehouse.books.landings import expected_sources, landing_gaps
from warehouse.books.ledger import next_month
from warehouse.landing_scan import scan_month_landings

SENSOR_NAME = "monthly_review_sensor"
LOOKBACK_MONTHS = 3  # ended months looked at besides the current one
MINIMUM_INTERVAL_SECONDS = 300
RUN_QUERY_LIMIT = 20
LANDED_THROUGH = "cardhours/landed_through"  # run tag: the newest landing a build starts from
FAILED_RUNS = {DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED, DagsterRunStatus.CANCELING}  # built nothing

Scan = Callable[[date], pl.DataFrame]  # a month's landings
RunsSince = Callable[[str, datetime], Sequence[DagsterRun]]  # runs of a partition created after a time


def months_to_check(now: datetime, lookback: int = LOOKBACK_MONTHS) -> list[date]:
    """The month of ``now`` (naive UTC) and the ``lookback`` before it, newest first, from the
    partitions' start on."""
    first, months = date.fromisoformat(PARTITIONS_START), []
    month = date(now.year, now.month, 1)
    for _ in range(lookback + 1):
        if month < first:
            break
        months.append(month)
        month = date(month.year - (month.month == 1), (month.month - 2) % 12 + 1, 1)
    return months


def month_request(month: date, now: datetime, scan: Scan, expected: dict[str, list[str]]) -> RunRequest | str:
    """The run request for ``month`` when it has ended at ``now`` (naive UTC) and every expected
    day landed 'ok' (``scan``: the month's landings, read only once the month has ended);
    otherwise why it waits."""
    end = next_month(month)
    if now < datetime.combine(end, time()):
        return f"{month:%Y-%m}: not ended (ends {end} 00:00 UTC)"
    landings = scan(month)
    if landings.is_empty():
        return f"{month:%Y-%m}: no day landed"
    gaps = landing_gaps(landings, expected, month, end, details=False)
    if gaps:
        return f"{month:%Y-%m}: " + "; ".join(gaps)
    newest = landings.get_column("landed_at").max().isoformat()
    return RunRequest(
        run_key=f"{month:%Y-%m} landed {newest}", partition_key=month.isoformat(), tags={LANDED_THROUGH: newest}
    )


def prior_run(request: RunRequest, runs: Sequence[DagsterRun]) -> str | None:
    """Why ``request`` is not needed, given the month's runs created since the landings it
    builds on: one that has not failed covers it; this request's own run, failed, waits for a
    person."""
    month = (request.partition_key or "")[:7]
    for run in runs:
        if run.status not in FAILED_RUNS:
            return f"{month}: built by run {run.run_id[:8]} ({run.status.value})"
    for run in runs:
        if run.tags.get(RUN_KEY_TAG) == request.run_key:
            return (
                f"{month}: run {run.run_id[:8]} built from these landings ended {run.status.value}: "
                "re-execute it from the Runs page; a re-landed day requests a new run"
            )
    return None


def review_tick(now: datetime, expected: dict[str, list[str]], scan: Scan, runs_since: RunsSince):
    """Every month to request at ``now`` (naive UTC), or a SkipReason with a line per month."""
    requests, waiting = [], []
    for month in months_to_check(now):
        verdict = month_request(month, now, scan, expected)
        if isinstance(verdict, RunRequest):
            since = datetime.fromisoformat(verdict.tags[LANDED_THROUGH])
            verdict = prior_run(verdict, runs_since(month.isoformat(), since)) or verdict
        if isinstance(verdict, RunRequest):
            requests.append(verdict)
        else:
            waiting.append(verdict)
    if requests:
        return SensorResult(run_requests=requests)
    return SkipReason("\n".join(waiting) or f"no month from {PARTITIONS_START} on to look at")


def month_runs(instance: DagsterInstance, partition_key: str, since: datetime) -> Sequence[DagsterRun]:
    """``monthly_review`` runs of the partition created after ``since`` (naive UTC), newest first."""
    runs_filter = RunsFilter(
        job_name=monthly_review_job.name,
        tags={PARTITION_NAME_TAG: partition_key},
        created_after=since.replace(tzinfo=UTC),
    )
    return instance.get_runs(runs_filter, limit=RUN_QUERY_LIMIT)


def build_review_sensor(minimum_interval_seconds: int = MINIMUM_INTERVAL_SECONDS) -> SensorDefinition:
    """The sensor, ticking at most every ``minimum_interval_seconds``; on by default."""

    @sensor(
        name=SENSOR_NAME,
        job=monthly_review_job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=DefaultSensorStatus.RUNNING,
        description="Requests a month's monthly_review once the month has ended and every day of it landed "
        "for every cluster and source; again when a day re-lands.",
    )
    def monthly_review_sensor(context: SensorEvaluationContext, cardhours: CardhoursResource):
        config = cardhours.config
        return review_tick(
            datetime.now(UTC).replace(tzinfo=None),
            expected_sources(config),
            partial(scan_month_landings, Path(config.warehouse.lake)),
            partial(month_runs, context.instance),
        )

    return monthly_review_sensor


monthly_review_sensor = build_review_sensor()
