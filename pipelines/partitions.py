"""Partitions: daily for ingest (one UTC day), monthly for marts and reports (one UTC month)."""

from __future__ import annotations

from datetime import date, datetime

from dagster import DailyPartitionsDefinition, MonthlyPartitionsDefinition, TimeWindow

PARTITIONS_START = "2024-01-01"

daily_partitions = DailyPartitionsDefinition(start_date=PARTITIONS_START, timezone="UTC")
monthly_partitions = MonthlyPartitionsDefinition(start_date=PARTITIONS_START, timezone="UTC")


def naive_window(window: TimeWindow) -> tuple[datetime, datetime]:
    """A Dagster time window as naive UTC datetimes (the warehouse convention)."""
    return window.start.replace(tzinfo=None), window.end.replace(tzinfo=None)


def days_of_month(month: str) -> list[str]:
    """Daily partition keys of a ``YYYY-MM`` month."""
    first = date.fromisoformat(f"{month}-01")
    keys = daily_partitions.get_partition_keys_in_range(_month_range(first))
    return list(keys)


def _month_range(first: date):
    from dagster import PartitionKeyRange

    next_month = date(first.year + (first.month == 12), first.month % 12 + 1, 1)
    last = date.fromordinal(next_month.toordinal() - 1)
    return PartitionKeyRange(first.isoformat(), last.isoformat())


def month_key(month: str) -> str:
    """The monthly partition key of ``YYYY-MM`` (Dagster keys months by their first day)."""
    return f"{month}-01"
