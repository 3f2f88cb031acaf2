"""How long a metrics server keeps samples, as the server itself states it.

Prometheus answers ``/api/v1/status/runtimeinfo`` with ``storageRetention``: ``"15d"``,
``"30d or 10GiB"``, or only a size (``"10GiB"``: no time limit to compare a month with).
VictoriaMetrics has no runtimeinfo; its ``/flags`` page lists ``-retentionPeriod="..."``, a
bare number meaning months (of 31 days, as VictoriaMetrics counts them).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import timedelta

from sources.prometheus.client import PrometheusClient, PrometheusQueryError

_PROMETHEUS_UNITS = {
    "y": timedelta(days=365),
    "w": timedelta(weeks=1),
    "d": timedelta(days=1),
    "h": timedelta(hours=1),
    "m": timedelta(minutes=1),
    "s": timedelta(seconds=1),
    "ms": timedelta(milliseconds=1),
}
_DURATION = re.compile(r"^(?:\d+(?:ms|y|w|d|h|m|s))+$")
_PART = re.compile(r"(\d+)(ms|y|w|d|h|m|s)")
_VM_FLAG = re.compile(r'^-retentionPeriod="?([^"\s]+)"?', re.MULTILINE)
_VM_PERIOD = re.compile(r"^(\d+(?:\.\d+)?)(h|d|w|y)?$")
_VM_UNITS = {
    None: timedelta(days=31),  # a bare number: months
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
    "y": timedelta(days=365),
}


@dataclass(frozen=True)
class Retention:
    stated: str  # as the server states it
    keeps: timedelta | None  # the time limit; None when the server limits only by size
    where: str  # the endpoint that said so


def prometheus_duration(text: str) -> timedelta | None:
    """``"1y2w"`` -> its timedelta; None for text that is not a Prometheus duration."""
    text = text.strip()
    if not _DURATION.match(text):
        return None
    return sum((int(n) * _PROMETHEUS_UNITS[unit] for n, unit in _PART.findall(text)), timedelta())


def victoria_period(text: str) -> timedelta | None:
    """VictoriaMetrics' ``-retentionPeriod`` value (``"1"`` month, ``"45d"``, ``"2y"``)."""
    match = _VM_PERIOD.match(text.strip())
    if match is None:
        return None
    return float(match.group(1)) * _VM_UNITS[match.group(2)]


def server_retention(client: PrometheusClient) -> Retention:
    """The server's retention (``PrometheusQueryError`` when it answers neither endpoint)."""
    try:
        body = client.get("/api/v1/status/runtimeinfo", {}, query="runtimeinfo", window="-")
    except PrometheusQueryError as error:
        if error.status not in (400, 404):
            raise
        return _victoria(client)
    stated = str(json.loads(bytes(body))["data"].get("storageRetention", "")).strip()
    times = [prometheus_duration(part) for part in stated.split(" or ")]
    keeps = next((t for t in times if t is not None), None)
    return Retention(stated or "(not stated)", keeps, "/api/v1/status/runtimeinfo")


def _victoria(client: PrometheusClient) -> Retention:
    text = bytes(client.get("/flags", {}, query="flags", window="-")).decode("utf-8", "replace")
    match = _VM_FLAG.search(text)
    if match is None:
        return Retention("(not stated)", None, "/flags")
    return Retention(match.group(1), victoria_period(match.group(1)), "/flags")
