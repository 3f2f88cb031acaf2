"""cardhours bench marts: the months it builds, and how rounds and months add up."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from cardhours.bench.marts import START, BenchError, MartsBenchResult, _check_months, months_of


def test_months_of_covers_every_landed_day() -> None:
    assert months_of(START, 30) == ["2026-09-01"]
    assert months_of(START, 31) == ["2026-09-01", "2026-10-01"]
    assert months_of(date(2026, 1, 31), 1) == ["2026-01-01"]
    assert months_of(date(2025, 12, 31), 2) == ["2025-12-01", "2026-01-01"]


def test_months_without_a_dagster_partition_are_refused() -> None:
    _check_months(["2026-09-01"])
    with pytest.raises(BenchError, match="2099-01"):
        _check_months(["2026-09-01", "2099-01-01"])


def test_seconds_add_the_fastest_round_of_each_month_and_rss_is_the_highest() -> None:
    builds = [
        {"month": "2026-09-01", "seconds": 12.0, "peak_rss_gb": 2.0},
        {"month": "2026-10-01", "seconds": 5.0, "peak_rss_gb": 1.0},
        {"month": "2026-09-01", "seconds": 10.0, "peak_rss_gb": 3.0},
        {"month": "2026-10-01", "seconds": 6.0, "peak_rss_gb": 1.5},
    ]
    result = MartsBenchResult(16, 61, 15, Path("/tmp/x"), True, 100, builds, None, (0.1, 0.2))
    assert result.summary() == {"samples": 100, "seconds": 15.0, "peak_rss_gb": 3.0}
