"""When the monthly review runs: ``[schedule]`` (timezone and hour of the run on the 1st).

Months stay UTC months (the warehouse convention); the timezone only sets the wall clock
of the monthly run. The run must come after the daily ingest of the month's last day
(02:30 UTC on the 1st), so hours that fall before it in UTC are rejected.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import Field, field_validator, model_validator

from config.base import StrictModel, did_you_mean, raise_problems

# The daily ingest schedule's time (pipelines/jobs.py): the previous UTC day is complete then.
DAILY_INGEST_UTC = time(2, 30)
# The monthly run starts at least this long after the last day's ingest started.
INGEST_MARGIN = timedelta(hours=1)
# Days on which the UTC offset is checked: winter and summer time of either hemisphere.
_PROBE_DAYS = ((2025, 1), (2025, 4), (2025, 7), (2025, 10))


class ScheduleConfig(StrictModel):
    """``[schedule]``: the monthly review runs on the 1st at ``monthly_hour`` in ``timezone``."""

    timezone: str = "UTC"  # IANA name, e.g. "Europe/Berlin"
    monthly_hour: Annotated[int, Field(ge=0, le=23)] = 6

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown IANA timezone {value!r}{did_you_mean(value, available_timezones())}") from None
        return value

    @model_validator(mode="after")
    def _after_daily_ingest(self) -> ScheduleConfig:
        for year, month in _PROBE_DAYS:
            local = datetime(year, month, 1, self.monthly_hour, tzinfo=ZoneInfo(self.timezone))
            utc = local.astimezone(UTC).replace(tzinfo=None)
            if utc < datetime.combine(local.date(), DAILY_INGEST_UTC) + INGEST_MARGIN:
                raise_problems(
                    [
                        (
                            ("monthly_hour",),
                            (
                                f"{self.monthly_hour:02d}:00 {self.timezone} on the 1st is {utc:%Y-%m-%d %H:%M} UTC, "
                                f"before the last day's ingest ({DAILY_INGEST_UTC:%H:%M} UTC on the 1st) plus "
                                f"{INGEST_MARGIN.seconds // 3600} h: pick a later hour"
                            ),
                        )
                    ]
                )
        return self

    @property
    def cron(self) -> str:
        return f"0 {self.monthly_hour} 1 * *"
