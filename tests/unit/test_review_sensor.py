"""The monthly review sensor's ticks: a month is requested once it has ended and every day of it
landed for every cluster and source (read from the lake's files), with a run key naming the newest
landing; otherwise the tick skips, saying per month what it waits for."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path

import duckdb
import pytest
from dagster import (
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    SensorResult,
    SkipReason,
    build_sensor_context,
)

from config import load_config
from pipelines.definitions import build_definitions
from pipelines.partitions import PARTITIONS_START
from pipelines.review_sensor import (
    LOOKBACK_MONTHS,
    MINIMUM_INTERVAL_SECONDS,
    SENSOR_NAME,
    month_request,
    months_to_check,
    prior_run,
    review_tick,
)
from tests.support.landings import land_month
from warehouse.landing_scan import month_pattern, scan_month_landings
from warehouse.landings import FAILED, Landing, record_landing

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "config"
NOVEMBER = date(2026, 11, 1)
HOLD_LOCK = """
import sys
from warehouse.lock import hold_warehouse
with hold_warehouse({warehouse!r}, "a monthly run"):
    print("held", flush=True)
    sys.stdin.read()
"""
CLUSTERS = {"a": ["dcgm", "sacct"], "b": ["dcgm"]}
LANDED = datetime(2026, 12, 1, 2, 41, 7)
AFTER = datetime(2026, 12, 1, 3, 0)  # a tick after November ended and its last day landed


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    return tmp_path / "cardhours.lake"


def land(lake: Path, month: date = NOVEMBER, landed_at: datetime = LANDED, skip: set[date] | None = None) -> None:
    with duckdb.connect() as conn:
        land_month(conn, lake, month, CLUSTERS, landed_at=landed_at, skip=skip)


def reland(lake: Path, landing: Landing) -> None:
    with duckdb.connect() as conn:
        record_landing(conn, lake, landing)


def request(lake: Path, now: datetime = AFTER, month: date = NOVEMBER) -> RunRequest | str:
    return month_request(month, now, partial(scan_month_landings, lake), CLUSTERS)


def no_runs(key: str, since: datetime) -> list[DagsterRun]:
    return []


def test_a_landed_month_is_requested_with_its_newest_landing_in_the_run_key(lake: Path) -> None:
    land(lake)
    land(lake, month=date(2026, 12, 1))  # the next month's files are not the month's
    verdict = request(lake)
    assert isinstance(verdict, RunRequest)
    assert verdict.run_key == "2026-11 landed 2026-12-01T02:41:07"
    assert verdict.partition_key == "2026-11-01"


def test_a_missing_day_is_named_with_its_cluster_and_source(lake: Path) -> None:
    land(lake, skip={date(2026, 11, 30)})
    verdict = request(lake)
    assert verdict == "2026-11: cluster 'a' dcgm: 2026-11-30 missing; cluster 'a' sacct: 2026-11-30 missing; " + (
        "cluster 'b' dcgm: 2026-11-30 missing"
    )


def test_failed_days_are_named_compactly(lake: Path) -> None:
    land(lake)
    for day in (3, 4):
        reland(lake, Landing("b", date(2026, 11, day), "dcgm", LANDED, FAILED, detail="ReadError: " + "x" * 400))
    assert request(lake) == "2026-11: cluster 'b' dcgm: 2026-11-03..2026-11-04 (2 days) failed"


def test_a_month_that_has_not_ended_is_not_read(lake: Path) -> None:
    def scan(month: date):
        raise AssertionError("read the landings of a month still going on")

    verdict = month_request(NOVEMBER, datetime(2026, 11, 30, 23, 59), scan, CLUSTERS)
    assert verdict == "2026-11: not ended (ends 2026-12-01 00:00 UTC)"


def test_a_month_without_landings_says_so(lake: Path) -> None:
    assert request(lake) == "2026-11: no day landed"


def test_a_relanded_day_gives_a_new_run_key_and_a_repeated_tick_the_same(lake: Path) -> None:
    land(lake)
    first, again = request(lake), request(lake)
    assert isinstance(first, RunRequest) and isinstance(again, RunRequest)
    assert first.run_key == again.run_key
    reland(lake, Landing("a", date(2026, 11, 12), "sacct", datetime(2026, 12, 5, 9, 30), rows=7))
    corrected = request(lake, now=datetime(2026, 12, 5, 10))
    assert isinstance(corrected, RunRequest)
    assert corrected.run_key == "2026-11 landed 2026-12-05T09:30:00"


def test_the_tick_looks_at_the_current_month_and_a_bounded_few_before_it() -> None:
    months = months_to_check(datetime(2026, 12, 2))
    assert months == [date(2026, 12, 1), date(2026, 11, 1), date(2026, 10, 1), date(2026, 9, 1)]
    assert len(months) == LOOKBACK_MONTHS + 1
    assert months_to_check(datetime(2024, 2, 10)) == [date(2024, 2, 1), date.fromisoformat(PARTITIONS_START)]
    assert months_to_check(datetime(2027, 1, 5))[:2] == [date(2027, 1, 1), date(2026, 12, 1)]


def test_the_month_pattern_lists_only_that_months_days(lake: Path) -> None:
    land(lake, month=date(2026, 10, 1))
    land(lake)
    listed = {path.parent.name for path in lake.glob(month_pattern(NOVEMBER))}
    assert listed == {f"day={NOVEMBER + timedelta(days=i)}" for i in range(30)}


def test_a_tick_requests_the_complete_month_and_skips_the_others_in_its_log(lake: Path) -> None:
    land(lake)
    land(lake, month=date(2026, 10, 1), skip={date(2026, 10, 31)})
    scan = partial(scan_month_landings, lake)
    result = review_tick(AFTER, CLUSTERS, scan, no_runs)
    assert isinstance(result, SensorResult)
    assert [r.run_key for r in result.run_requests or []] == ["2026-11 landed 2026-12-01T02:41:07"]
    skipped = review_tick(AFTER, {**CLUSTERS, "c": ["dcgm"]}, scan, no_runs)
    assert isinstance(skipped, SkipReason)
    assert (skipped.skip_message or "").splitlines() == [
        "2026-12: not ended (ends 2027-01-01 00:00 UTC)",
        "2026-11: cluster 'c' dcgm: 2026-11-01..2026-11-30 (30 days) missing",
        "2026-10: cluster 'a' dcgm: 2026-10-31 missing; cluster 'a' sacct: 2026-10-31 missing; "
        "cluster 'b' dcgm: 2026-10-31 missing; cluster 'c' dcgm: 2026-10-01..2026-10-31 (31 days) missing",
        "2026-09: no day landed",
    ]


def _run(status: DagsterRunStatus, run_key: str = "by hand") -> DagsterRun:
    tags = {"dagster/partition": "2026-11-01", "dagster/run_key": run_key}
    return DagsterRun(job_name="monthly_review", run_id="1a2b3c4d-0000", status=status, tags=tags)


def test_a_run_created_after_the_newest_landing_covers_the_month(lake: Path) -> None:
    land(lake)
    verdict = request(lake)
    assert isinstance(verdict, RunRequest)
    covered = prior_run(verdict, [_run(DagsterRunStatus.STARTED)])
    assert covered == "2026-11: built by run 1a2b3c4d (STARTED)"
    assert prior_run(verdict, [_run(DagsterRunStatus.FAILURE)]) is None  # someone else's failed build: try
    own = prior_run(verdict, [_run(DagsterRunStatus.FAILURE, run_key=verdict.run_key)])
    assert own is not None and "ended FAILURE: re-execute it from the Runs page" in own
    scan = partial(scan_month_landings, lake)
    seen: list[tuple[str, datetime]] = []

    def runs_since(key: str, since: datetime) -> list[DagsterRun]:
        seen.append((key, since))
        return []

    result = review_tick(AFTER, CLUSTERS, scan, runs_since)
    assert isinstance(result, SensorResult) and seen == [("2026-11-01", LANDED)]


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """The minimal config (one cluster 'sim': dcgm and sacct) with its warehouse in tmp_path."""
    config = tmp_path / "cardhours.toml"
    config.write_text((FIXTURES / "minimal.toml").read_text())
    return config


@pytest.fixture
def lock_held_elsewhere(site: Path) -> Iterator[None]:
    """Another process holds the warehouse lock (as a long monthly run would)."""
    warehouse = load_config(site).warehouse.path
    code = HOLD_LOCK.format(warehouse=str(warehouse))
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield
    finally:
        holder.communicate("")


def test_the_sensor_ticks_without_the_warehouse_lock_or_file(site: Path, lock_held_elsewhere: None) -> None:
    defs = build_definitions(str(site))
    sensor = defs.resolve_sensor_def(SENSOR_NAME)
    assert sensor.job_name == "monthly_review" and sensor.minimum_interval_seconds == MINIMUM_INTERVAL_SECONDS
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    config = load_config(site)
    previous = months_to_check(datetime.now(UTC).replace(tzinfo=None))[1]
    with duckdb.connect() as conn:
        land_month(conn, config.warehouse.lake, previous, {"sim": ["dcgm", "sacct"]})
    with build_sensor_context(
        instance=DagsterInstance.ephemeral(), repository_def=defs.get_repository_def(), resources=dict(defs.resources)
    ) as context:
        data = sensor.evaluate_tick(context)
    assert [r.partition_key for r in data.run_requests or []] == [previous.isoformat()], data.skip_message
    assert not config.warehouse.path.exists()  # the DuckDB file is never opened (nor created)
