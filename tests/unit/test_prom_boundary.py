"""``boundary.probe_left_open`` on answers written as a server with either range rule writes them
(a ``PrometheusClient`` whose HTTP transport is replaced; the real servers: the Prometheus
and VictoriaMetrics integration tests)."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from cardhours.sources.prometheus.boundary import probe_left_open
from cardhours.sources.prometheus.client import PrometheusClient, PrometheusQueryError

T0 = 1_772_409_600_000  # ms
SAMPLES = [T0 + 15_000 * i for i in range(240)]  # one series, every 15 s for an hour


class Server(PrometheusClient):
    """One series ``m{gpu="0"}`` with samples at ``times``; range selectors ``[t - r, t]``, or
    ``(t - r, t]`` when ``left_open``."""

    def __init__(self, left_open: bool, times: list[int] = SAMPLES, series: list[dict] | None = None,
                 body: bytes | None = None) -> None:
        super().__init__("http://prometheus.invalid:9090")
        self.left_open, self.times, self.body = left_open, times, body
        self.series = [{"__name__": "m", "gpu": "0"}] if series is None else series
        self.asked: list[str] = []

    def get(self, path: str, params: Mapping[str, str], *, query: str, window: str, into=None) -> bytes:
        self.asked.append(query)
        if path == "/api/v1/series":
            return json.dumps({"status": "success", "data": self.series}).encode()
        if self.body is not None:
            return self.body
        at = round(float(params["time"]) * 1000)
        span = int(query.rsplit("[", 1)[1].removesuffix("ms]"))
        inside = [t for t in self.times if (at - span < t if self.left_open else at - span <= t) and t <= at]
        result = [{"metric": self.series[0], "values": [[t / 1000, "1"] for t in inside]}] if inside else []
        return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()


@pytest.mark.parametrize("left_open", [False, True])
def test_the_left_edge_rule_is_read_from_the_answer(left_open: bool) -> None:
    server = Server(left_open)
    assert probe_left_open(server, "m", T0, T0 + 86_400_000) is left_open
    assert server.asked[-1] == f'{{__name__="m",gpu="0"}}[1ms]'  # one series, exactly selected


def test_no_series_or_no_sample_in_the_window_cannot_tell() -> None:
    assert probe_left_open(Server(True, series=[]), "m", T0, T0 + 60_000) is None
    late = Server(True, times=[T0 + 7_200_000])  # listed for the day (as VictoriaMetrics does), not in the hour
    assert probe_left_open(late, "m", T0, T0 + 3_600_000) is None


def test_an_undecodable_answer_names_the_query() -> None:
    with pytest.raises(PrometheusQueryError, match=r"undecodable answer .* for query '\{__name__=\"m\",gpu=\"0\"\}\["):
        probe_left_open(Server(True, body=b"<html>proxy login</html>"), "m", T0, T0 + 60_000)
