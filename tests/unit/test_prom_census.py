"""``census.list_series``: one listing, or host shards when the server caps the series a request
may match (a ``PrometheusClient`` whose HTTP transport is replaced by a small PromQL-matcher
model of the series API; the real server: tests/integration/test_victoria_metrics.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import pytest

from sources.prometheus.census import list_series
from sources.prometheus.client import PrometheusClient, PrometheusQueryError

REFUSAL = "cannot find metric names: error when searching tsids: the number of matching timeseries exceeds {}"


def series(host_label: str | None, host: str, n: int) -> list[dict[str, str]]:
    labels = {} if host_label is None else {host_label: host}
    return [{"__name__": "m", **labels, "gpu": str(i), "job": "dcgm"} for i in range(n)]


SITE = [
    *series("Hostname", "a", 3),
    *series("Hostname", "b", 4),
    *series("Hostname", "c.x", 2),
    *series("hostname", "d", 5),
    *series(None, "", 1),
]


def matches(labels: Mapping[str, str], query: str) -> bool:
    """``m{l="v",l=~"r",...}`` against a label set (absent labels are "")."""
    for name, op, value in re.findall(r'(\w+)(=~|=)"((?:[^"\\]|\\.)*)"', query):
        have = labels.get(name, "")
        value = value.replace("\\\\", "\\")
        if (op == "=" and have != value) or (op == "=~" and not re.fullmatch(value, have)):
            return False
    return True


class Capped(PrometheusClient):
    def __init__(self, cap: int, site: list[dict[str, str]] = SITE, status: int = 422) -> None:
        super().__init__("http://prometheus.invalid:9090")
        self.cap, self.site, self.status = cap, site, status
        self.listings: list[str] = []

    def get(self, path: str, params: Mapping[str, str], *, query: str, window: str, into=None) -> bytes:
        match = params["match[]"]
        found = [labels for labels in self.site if matches(labels, match)]
        if path.startswith("/api/v1/label/"):
            label = path.split("/")[4]
            return json.dumps({"status": "success", "data": sorted({s.get(label, "") for s in found})}).encode()
        if len(found) > self.cap:
            error = REFUSAL.format(self.cap) if self.status == 422 else "server is on fire"
            raise PrometheusQueryError(
                f"HTTP {self.status}: {error}",
                url=self.url + path,
                query=query,
                window=window,
                status=self.status,
                error=error,
                attempts=1,
            )
        self.listings.append(match)
        return json.dumps({"status": "success", "data": found}).encode()


def key(labels: dict[str, str]) -> str:
    return json.dumps(labels, sort_keys=True)


def test_one_listing_when_the_server_allows_it() -> None:
    found, shards = list_series(Capped(cap=100), "m", "", 0, 60_000, "w")
    assert sorted(map(key, found)) == sorted(map(key, SITE)) and shards == 0


@pytest.mark.parametrize("cap", [9, 6, 5])
def test_refused_listing_is_taken_host_by_host_each_series_once(cap: int) -> None:
    client = Capped(cap)
    found, shards = list_series(client, "m", '{job="dcgm"}', 0, 60_000, "w")
    assert sorted(map(key, found)) == sorted(map(key, SITE))  # every series once: shards are disjoint
    assert shards == len(client.listings) > 1
    assert all('job="dcgm"' in listing for listing in client.listings)
    assert any('Hostname="",hostname=""' in listing for listing in client.listings)  # series with neither label


def test_a_host_over_the_cap_alone_fails_naming_it() -> None:
    with pytest.raises(PrometheusQueryError, match="number of matching timeseries exceeds 4") as caught:
        list_series(Capped(cap=4), "m", "", 0, 60_000, "w")
    assert caught.value.query in ('m{Hostname="",hostname=~"d"}',)


def test_other_errors_are_not_retried_in_shards() -> None:
    client = Capped(cap=3, status=500)
    with pytest.raises(PrometheusQueryError, match="server is on fire"):
        list_series(client, "m", "", 0, 60_000, "w")
    assert client.listings == []
