"""cardhours as a service: a real ``dagster-daemon`` and ``dagster-webserver`` on the production
instance config (deploy/dagster.yaml) with a real PostgreSQL behind it.

A simulated 8-GPU cluster of four days. Through the webserver's GraphQL API the test starts a
schedule that is due every minute (tests/support/dagster_service_defs.py: the daemon fires it at
the next minute boundary, requesting 2026-10-04) and launches a backfill of the daily ingest for
2026-10-01..03. The daemon runs all four (one at a time: the instance allows one run, DuckDB one
writer). Then: each run succeeded, the runs, events, ticks and the backfill are rows in
PostgreSQL, and the warehouse holds every simulated sample of the four days.
"""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from cardhours.cli import app
from tests.support.dagster_service import REPOSITORY_SELECTOR, TERMINAL, DagsterService, partition_of
from tests.support.dagster_service_defs import SCHEDULE_NAME
from tests.support.postgres import PostgresServer
from tests.support.warehouse_read import read_lake

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BACKFILL_DAYS = ["2026-10-01", "2026-10-02", "2026-10-03"]
SCHEDULED_DAY = "2026-10-04"
START_SCHEDULE = """
mutation($selector: ScheduleSelector!) {
  startSchedule(scheduleSelector: $selector) {
    __typename
    ... on ScheduleStateResult { scheduleState { status } }
    ... on Error { message }
  }
}"""


def _simulate(root: Path) -> Path:
    argv = ["simulate", "--out", str(root), "--gpus", "8", "--days", "4", "--start", BACKFILL_DAYS[0]]
    done = CliRunner().invoke(app, [*argv, "--seed", "11", "--step", "300", "--metrics-format", "parquet"])
    assert done.exit_code == 0, done.output
    return root / "cardhours.toml"


@pytest.fixture(scope="module")
def service_runs(tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer):
    root = tmp_path_factory.mktemp("service")
    config = _simulate(root / "sim")
    env = {**postgres_server.env, "CARDHOURS_CONFIG": str(config), "CARDHOURS_TEST_SCHEDULED_DAY": SCHEDULED_DAY}
    began = time.monotonic()
    with DagsterService(root / "dagster_home", env, module="tests.support.dagster_service_defs") as service:
        up = time.monotonic() - began
        selector = {**REPOSITORY_SELECTOR, "scheduleName": SCHEDULE_NAME}
        started = service.query(START_SCHEDULE, {"selector": selector})
        assert started["startSchedule"]["__typename"] == "ScheduleStateResult", started
        backfill_id = service.launch_backfill("daily_ingest", BACKFILL_DAYS)

        def finished() -> bool:
            scheduled = service.runs("dagster/schedule_name", SCHEDULE_NAME)
            return len(scheduled) == 1 and scheduled[0]["status"] in TERMINAL and service.backfill_done(backfill_id, 3)

        service.wait("one scheduled and three backfilled runs finish", finished, timeout=900)
        yield {
            "service": service,
            "postgres": postgres_server,
            "backfill_id": backfill_id,
            "scheduled": service.runs("dagster/schedule_name", SCHEDULE_NAME),
            "backfilled": service.runs("dagster/backfill", backfill_id),
            "backfill_status": service.backfill_status(backfill_id),
            "home": root / "dagster_home",
            "sim": root / "sim",
            "seconds": {"start": up, "runs": time.monotonic() - began - up},
        }


def test_schedule_fires_through_the_daemon(service_runs: dict) -> None:
    (run,) = service_runs["scheduled"]
    assert (run["status"], partition_of(run)) == ("SUCCESS", SCHEDULED_DAY), service_runs["service"].report()


def test_backfill_runs_every_day_and_succeeds(service_runs: dict) -> None:
    runs = service_runs["backfilled"]
    assert sorted((partition_of(r), r["status"]) for r in runs) == [(day, "SUCCESS") for day in BACKFILL_DAYS]
    assert service_runs["backfill_status"] == "COMPLETED_SUCCESS"


def test_daily_runs_are_not_queued_behind_the_warehouse_writer(service_runs: dict) -> None:
    """Daily runs write only the lake: none carries the monthly writer's tag, so the instance's
    ``tag_concurrency_limits`` (deploy/dagster.yaml) never holds them back."""
    pg: PostgresServer = service_runs["postgres"]
    spans = pg.query("SELECT start_time, end_time FROM runs ORDER BY start_time")
    assert len(spans) == 4 and all(start is not None and end is not None for start, end in spans), spans
    for run in service_runs["scheduled"] + service_runs["backfilled"]:
        assert "cardhours/warehouse" not in {tag["key"] for tag in run["tags"]}, run


def test_runs_events_ticks_and_backfill_are_in_postgres(service_runs: dict) -> None:
    pg: PostgresServer = service_runs["postgres"]
    run_ids = [r["runId"] for r in service_runs["scheduled"] + service_runs["backfilled"]]
    rows = pg.query("SELECT partition, status FROM runs WHERE run_id = ANY(%s) ORDER BY partition", (run_ids,))
    assert rows == [(day, "SUCCESS") for day in [*BACKFILL_DAYS, SCHEDULED_DAY]]
    materialized = pg.query(
        "SELECT run_id, count(*) FROM event_logs WHERE run_id = ANY(%s) AND asset_key = %s "
        "AND dagster_event_type = 'ASSET_MATERIALIZATION' GROUP BY run_id",
        (run_ids, '["raw", "dcgm_samples"]'),
    )
    assert sorted(materialized) == sorted((run_id, 1) for run_id in run_ids)
    backfills = pg.query("SELECT key, status FROM bulk_actions")
    assert backfills == [(service_runs["backfill_id"], "COMPLETED_SUCCESS")]
    ticks = pg.query("SELECT status FROM job_ticks WHERE status = 'SUCCESS'")
    assert ticks == [("SUCCESS",)]
    assert not list(service_runs["home"].rglob("*.db")), "an instance database was written to SQLite files"


def test_warehouse_holds_every_simulated_sample(service_runs: dict) -> None:
    sim = service_runs["sim"]
    expected = (
        pl.scan_parquet(sim / "metrics" / "**" / "*.parquet", hive_partitioning=True)
        .group_by(pl.col("day").cast(pl.String))
        .len()
        .sort("day")
        .collect()
        .rows()
    )
    landed = read_lake(
        sim / "cardhours.toml", "SELECT strftime(day, '%Y-%m-%d'), count(*) FROM raw.dcgm_samples GROUP BY 1 ORDER BY 1"
    )
    assert landed.rows() == expected
    assert not (sim / "cardhours.duckdb").exists()  # daily runs write the lake only
    assert [day for day, _ in expected] == [*BACKFILL_DAYS, SCHEDULED_DAY]
