"""Retention as servers state it: Prometheus durations and VictoriaMetrics periods."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sources.prometheus.retention import prometheus_duration, victoria_period


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("15d", timedelta(days=15)),
        ("1y2w", timedelta(days=365 + 14)),
        ("36h30m", timedelta(hours=36, minutes=30)),
        ("500ms", timedelta(milliseconds=500)),
        ("10GiB", None),
        ("", None),
        ("15 d", None),
    ],
)
def test_prometheus_durations(text: str, expected: timedelta | None) -> None:
    assert prometheus_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1", timedelta(days=31)), ("45d", timedelta(days=45)), ("2y", timedelta(days=730)), ("12h", timedelta(hours=12))],
)
def test_victoria_periods(text: str, expected: timedelta) -> None:
    assert victoria_period(text) == expected
    assert victoria_period("forever") is None
