"""The monthly review schedule: [schedule] config (timezone, hour), its ticks, and the
schedule reading it from the config file at tick time (never at import)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from dagster import (
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    SkipReason,
    build_schedule_context,
    instance_for_test,
)

from config import EXAMPLE_CONFIG, ConfigError, load_config
from config.schedule import ScheduleConfig
from pipelines.definitions import build_definitions
from pipelines.jobs import review_month_key
from pipelines.schedules import MONTHLY_REVIEW_CRON, review_tick


def config_with(tmp_path: Path, schedule: str) -> Path:
    path = tmp_path / "cardhours.toml"
    text = EXAMPLE_CONFIG.read_text(encoding="utf-8")
    text = re.sub(r"\n\[schedule\]\n(?:[^\[\n][^\n]*\n?)*", "\n", text)  # the example's own section
    path.write_text(text + "\n[schedule]\n" + schedule + "\n", encoding="utf-8")
    return path


def test_defaults_are_06_utc() -> None:
    settings = ScheduleConfig()
    assert (settings.timezone, settings.monthly_hour, settings.cron) == ("UTC", 6, "0 6 1 * *")
    assert load_config(EXAMPLE_CONFIG).schedule == settings


def test_timezone_and_hour_from_the_file(tmp_path: Path) -> None:
    config = load_config(config_with(tmp_path, 'timezone = "America/New_York"\nmonthly_hour = 7'))
    assert config.schedule == ScheduleConfig(timezone="America/New_York", monthly_hour=7)


@pytest.mark.parametrize(
    ("schedule", "key", "words"),
    [
        ('timezone = "Europe/Berln"', "schedule.timezone", "did you mean 'Europe/Berlin'"),
        ('timezone = "Asia/Tokyo"', "schedule.monthly_hour", "06:00 Asia/Tokyo on the 1st is"),
        ("monthly_hour = 3", "schedule.monthly_hour", "before the last day's ingest"),
        ('timezone = "Europe/Berlin"\nmonthly_hour = 5', "schedule.monthly_hour", "03:00 UTC"),  # summer time
        ("monthly_hour = 24", "schedule.monthly_hour", "24"),
        ('monthly_hour = "6"', "schedule.monthly_hour", ""),
        ("zone = 1", "schedule.zone", ""),
    ],
)
def test_bad_schedules_name_the_key(tmp_path: Path, schedule: str, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(config_with(tmp_path, schedule))
    assert key in str(error.value) and words in str(error.value)


@pytest.mark.parametrize(
    ("tz", "hour"), [("UTC", 4), ("Europe/Berlin", 6), ("America/Los_Angeles", 0), ("Asia/Tokyo", 13)]
)
def test_hours_after_the_ingest_are_accepted(tz: str, hour: int) -> None:
    assert ScheduleConfig(timezone=tz, monthly_hour=hour).monthly_hour == hour


def test_review_month_key_is_the_previous_utc_month() -> None:
    assert review_month_key(datetime(2026, 11, 1, 6, tzinfo=UTC)) == "2026-10-01"
    assert review_month_key(datetime(2027, 1, 1, 6, tzinfo=ZoneInfo("Europe/Berlin"))) == "2026-12-01"
    assert review_month_key(datetime(2026, 12, 1, 6, tzinfo=ZoneInfo("America/New_York"))) == "2026-11-01"
    assert review_month_key(datetime(2024, 1, 1, 6, tzinfo=UTC)) is None  # before the partitions


@pytest.fixture(scope="module")
def no_runs() -> Iterator[DagsterInstance]:
    """A throwaway instance that holds no runs (the schedule asks it which months were built)."""
    with instance_for_test() as instance:
        yield instance


def _ticks(defs, start: datetime, hours: int, instance: DagsterInstance) -> list[tuple[datetime, object]]:
    """Evaluate the schedule at every hourly tick from ``start`` (UTC) for ``hours``."""
    schedule = defs.resolve_schedule_def("monthly_review_schedule")
    results = []
    for offset in range(hours):
        tick = start + timedelta(hours=offset)
        if tick.day not in (1, 2):  # the cron only ticks on the 1st and 2nd (UTC)
            continue
        with build_schedule_context(
            instance=instance,
            scheduled_execution_time=tick,
            repository_def=defs.get_repository_def(),
            resources=dict(defs.resources),
        ) as context:
            data = schedule.evaluate_tick(context)
        results.append((tick, data))
    return results


@pytest.mark.parametrize(
    ("tz", "hour", "run_at_utc"),
    [
        ("UTC", 6, datetime(2026, 11, 1, 6, tzinfo=UTC)),
        ("Europe/Berlin", 6, datetime(2026, 11, 1, 5, tzinfo=UTC)),  # CET = UTC+1 in November
        ("Asia/Tokyo", 13, datetime(2026, 11, 1, 4, tzinfo=UTC)),
        ("America/Los_Angeles", 0, datetime(2026, 11, 1, 7, tzinfo=UTC)),  # PDT until Nov 1 09:00 UTC
    ],
)
def test_schedule_requests_the_month_once_at_the_configured_hour(
    tmp_path: Path, no_runs: DagsterInstance, tz: str, hour: int, run_at_utc: datetime
) -> None:
    defs = build_definitions(str(config_with(tmp_path, f'timezone = "{tz}"\nmonthly_hour = {hour}')))
    schedule = defs.resolve_schedule_def("monthly_review_schedule")
    assert schedule.job_name == "monthly_review"
    assert (schedule.cron_schedule, schedule.execution_timezone) == (MONTHLY_REVIEW_CRON, "UTC")
    ticks = _ticks(defs, datetime(2026, 11, 1, 0, tzinfo=UTC), 48, no_runs)
    requested = [(tick, data.run_requests) for tick, data in ticks if data.run_requests]
    assert len(requested) == 1, requested
    tick, requests = requested[0]
    assert tick == run_at_utc
    assert requests[0].partition_key == "2026-10-01" and requests[0].run_key == "2026-10-01"
    skips = [data.skip_message for _, data in ticks if not data.run_requests]
    assert len(skips) == len(ticks) - 1 and all(f"{hour:02d}:00 {tz}" in message for message in skips)


def test_schedule_skips_before_the_first_partition() -> None:
    result = review_tick(datetime(2024, 1, 1, 6, tzinfo=UTC), ScheduleConfig())
    assert isinstance(result, SkipReason) and "no monthly partition" in (result.skip_message or "")


def test_the_config_is_read_at_tick_time_not_at_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_runs: DagsterInstance
) -> None:
    from dagster import EnvVar

    monkeypatch.delenv("CARDHOURS_TEST_CONFIG", raising=False)
    defs = build_definitions(EnvVar("CARDHOURS_TEST_CONFIG"))  # no file yet: building must not read it
    path = config_with(tmp_path, 'timezone = "Europe/Berlin"\nmonthly_hour = 9')
    monkeypatch.setenv("CARDHOURS_TEST_CONFIG", str(path))
    ticks = _ticks(defs, datetime(2026, 11, 1, 0, tzinfo=UTC), 24, no_runs)
    assert [tick.hour for tick, data in ticks if data.run_requests] == [8]  # 09:00 CET, not the default 06:00 UTC


def test_a_month_already_built_after_it_ended_is_not_requested_again(tmp_path: Path) -> None:
    """The review sensor built October once its last day landed: the schedule's tick on the 1st skips."""
    defs = build_definitions(str(config_with(tmp_path, 'timezone = "UTC"\nmonthly_hour = 6')))
    tags = {"dagster/partition": "2026-10-01", "dagster/sensor_name": "monthly_review_sensor"}
    with instance_for_test() as instance:
        run = instance.add_run(DagsterRun(job_name="monthly_review", status=DagsterRunStatus.SUCCESS, tags=tags))
        ticks = _ticks(defs, datetime(2026, 11, 1, 6, tzinfo=UTC), 1, instance)
    assert [data.skip_message for _, data in ticks] == [f"2026-10: built by run {run.run_id[:8]} (SUCCESS)"]
