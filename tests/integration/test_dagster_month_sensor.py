"""A month's backfill through the real daemon, then its monthly review with nobody clicking.

A simulated 8-GPU cluster (dcgm and sacct) of one whole month: the UTC month before today, so the
sensor looks at it. A real ``dagster-daemon`` and ``dagster-webserver`` run on the production
instance config with this module's own PostgreSQL, and the production code location with the
review sensor ticking every 10 s instead of every 5 min and the daily steps run in their run's
process (tests/support/dagster_sensor_defs.py says why).
Through the webserver's GraphQL API the test backfills every day of the month but the last. Then:
the sensor is running without anyone starting it, its first tick after the backfill skips naming
the missing day per source, a backfill of that day makes it request the month's
``monthly_review`` (run key: the month and its newest landing), that run succeeds, the month's
marts are in the warehouse, and later ticks request nothing more.
"""

from __future__ import annotations

import time
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cardhours.cli import app
from config import load_config
from pipelines.partitions import days_of_month
from pipelines.review_sensor import SENSOR_NAME, months_to_check
from tests.support.dagster_service import REPOSITORY_SELECTOR, TERMINAL, DagsterService, partition_of
from tests.support.postgres import PostgresServer
from tests.support.warehouse_read import read
from warehouse.landing_scan import scan_month_landings

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(2700)]

SENSOR_TICKS = """
query($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) {
    __typename
    ... on Sensor {
      sensorState { status ticks(limit: 20) { status timestamp skipReason runIds error { message } } }
    }
  }
}"""
BACKFILL_SECONDS = 1800  # the 29 days took 7.5 min (load average 4-10) to 16 min (load average 18-30) on 2 CPUs


def _simulate(root: Path, month: date, days: int) -> Path:
    argv = ["simulate", "--out", str(root), "--gpus", "8", "--days", str(days), "--start", month.isoformat()]
    done = CliRunner().invoke(app, [*argv, "--seed", "7", "--step", "300", "--metrics-format", "parquet"])
    assert done.exit_code == 0, done.output
    return root / "cardhours.toml"


def _sensor_state(service: DagsterService) -> dict:
    answer = service.query(SENSOR_TICKS, {"selector": {**REPOSITORY_SELECTOR, "sensorName": SENSOR_NAME}})
    sensor = answer["sensorOrError"]
    assert sensor["__typename"] == "Sensor", sensor
    return sensor["sensorState"]


def _tick_after(service: DagsterService, after: float, what: str, timeout: float = 180) -> dict:
    """The first tick started after ``after`` (epoch seconds) whose skip reason or runs show
    ``what``; a failed tick fails the test with its error."""
    found: list[dict] = []

    def ticked() -> bool:
        ticks = [t for t in _sensor_state(service)["ticks"] if t["timestamp"] > after]
        for tick in sorted(ticks, key=lambda t: t["timestamp"]):
            assert tick["status"] != "FAILURE", f"sensor tick failed: {tick['error']}\n{service.report()}"
            if tick["status"] in ("SKIPPED", "SUCCESS"):
                found.append(tick)
                return True
        return False

    service.wait(what, ticked, timeout)
    return found[0]


def _sensor_runs(service: DagsterService) -> list[dict]:
    return service.runs("dagster/sensor_name", SENSOR_NAME)


@pytest.fixture(scope="module")
def month_run(tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer):
    root = tmp_path_factory.mktemp("sensor")
    month = months_to_check(datetime.now(UTC).replace(tzinfo=None))[1]
    days = days_of_month(f"{month:%Y-%m}")
    config = _simulate(root / "sim", month, len(days))
    env = {**postgres_server.env, "CARDHOURS_CONFIG": str(config)}
    seconds: dict[str, float] = {}
    began = time.monotonic()
    with DagsterService(root / "dagster_home", env, module="tests.support.dagster_sensor_defs") as service:
        seconds["start"] = time.monotonic() - began
        default_status = _sensor_state(service)["status"]
        backfill = service.launch_backfill("daily_ingest", days[:-1])
        service.wait(
            f"the backfill of {len(days) - 1} days ends",
            lambda: service.backfill_done(backfill, len(days) - 1),
            BACKFILL_SECONDS,
        )
        seconds["backfill"] = time.monotonic() - began - seconds["start"]
        skipped = _tick_after(service, time.time(), "a sensor tick after the backfill")
        runs_before = _sensor_runs(service)
        last_day = service.launch_backfill("daily_ingest", days[-1:])
        mark = time.monotonic()
        service.wait("the last day's backfill ends", lambda: service.backfill_done(last_day, 1), 600)

        def reviewed() -> bool:
            runs = _sensor_runs(service)
            return bool(runs) and all(run["status"] in TERMINAL for run in runs)

        service.wait("the sensor's monthly_review run ends", reviewed, 1200)
        seconds["last day and review"] = time.monotonic() - mark
        after_review = _tick_after(service, time.time(), "a sensor tick after the review")
        yield {
            "service": service,
            "month": month,
            "days": days,
            "default_status": default_status,
            "backfill": service.runs("dagster/backfill", backfill),
            "backfill_status": service.backfill_status(backfill),
            "skipped": skipped,
            "runs_before": runs_before,
            "review_runs": _sensor_runs(service),
            "after_review": after_review,
            "config": load_config(config),
            "seconds": seconds,
        }
    print(f"\nsensor test seconds: {seconds}")


def test_the_sensor_runs_without_anyone_starting_it(month_run: dict) -> None:
    assert month_run["default_status"] == "RUNNING"


def test_the_backfill_of_all_days_but_the_last_succeeds(month_run: dict) -> None:
    runs, days = month_run["backfill"], month_run["days"]
    assert sorted((partition_of(r), r["status"]) for r in runs) == [(day, "SUCCESS") for day in days[:-1]]
    assert month_run["backfill_status"] == "COMPLETED_SUCCESS"


def test_the_sensor_skips_naming_the_missing_day(month_run: dict) -> None:
    missing, month = month_run["days"][-1], month_run["month"]
    tick = month_run["skipped"]
    assert tick["status"] == "SKIPPED" and not month_run["runs_before"], tick
    line = f"{month:%Y-%m}: cluster 'sim' dcgm: {missing} missing; cluster 'sim' sacct: {missing} missing"
    assert line in tick["skipReason"].splitlines(), tick["skipReason"]


def test_the_last_day_brings_one_review_run_keyed_by_the_newest_landing(month_run: dict) -> None:
    (run,) = month_run["review_runs"]
    assert (run["status"], partition_of(run)) == ("SUCCESS", month_run["month"].isoformat()), month_run[
        "service"
    ].report()
    newest = scan_month_landings(month_run["config"].warehouse.lake, month_run["month"])["landed_at"].max()
    tags = {tag["key"]: tag["value"] for tag in run["tags"]}
    assert tags["dagster/run_key"] == f"{month_run['month']:%Y-%m} landed {newest.isoformat()}"


def test_later_ticks_request_nothing_more(month_run: dict) -> None:
    tick, (run,) = month_run["after_review"], month_run["review_runs"]
    assert tick["status"] == "SKIPPED", tick
    expected = f"{month_run['month']:%Y-%m}: built by run {run['runId'][:8]} (SUCCESS)"
    assert expected in tick["skipReason"].splitlines(), tick["skipReason"]


def test_the_months_marts_and_review_are_built(month_run: dict) -> None:
    config, month = month_run["config"], month_run["month"]
    for table in ("marts.fct_job_usage", "marts.mart_cluster_monthly", "marts.mart_department_monthly"):
        rows = read(config.warehouse.path, f"SELECT count(*) AS n FROM {table} WHERE month = ?", [month])
        assert rows.item() > 0, table
    assert (config.reports.dir / f"{month:%Y-%m}" / "review.html").is_file()
