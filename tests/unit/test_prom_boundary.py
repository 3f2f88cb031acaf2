"""``boundary.probe_left_open`` on answers written as a server with either range rule writes them
(a ``PrometheusClient`` whose HTTP transport is replaced; the real servers: the Prometheus
and VictoriaMetrics integration tests)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import pytest

from sources.prometheus.boundary import probe_left_open
from sources.prometheus.client import PrometheusClient, PrometheusQueryError

T0 = 1_772_409_600_000  # ms
SAMPLES = [T0 + 15_000 * i for i in range(240)]  # every 15 s for an hour
LABELS = {"gpu": "0", "job": "dcgm"}


class Server(PrometheusClient):
    """One series ``m{gpu="0",job="dcgm"}`` with samples at ``times``; range selectors
    ``[t - r, t]``, or ``(t - r, t]`` when ``left_open``."""

    def __init__(self, left_open: bool, times: list[int] = SAMPLES, body: bytes | None = None) -> None:
        super().__init__("http://prometheus.invalid:9090")
        self.left_open, self.times, self.body = left_open, times, body
        self.asked: list[str] = []

    def inside(self, at: int, span: int) -> list[int]:
        return [t for t in self.times if (at - span < t if self.left_open else at - span <= t) and t <= at]

    def get(self, path: str, params: Mapping[str, str], *, query: str, window: str, into=None) -> bytes:
        assert path == "/api/v1/query"
        self.asked.append(query)
        if self.body is not None:
            return self.body
        at = round(float(params["time"]) * 1000)
        span = int(re.search(r"\[(\d+)ms\]", query).group(1))
        inside = self.inside(at, span)
        if query.startswith("topk(1, count_over_time("):  # an aggregation drops the metric name
            result = [{"metric": LABELS, "value": [at / 1000, str(len(inside))]}] if inside else []
            data = {"resultType": "vector", "result": result}
        else:
            assert query.startswith('m{gpu="0",job="dcgm"}[')  # the one series, exactly selected
            values = [[t / 1000, "1"] for t in inside]
            data = {
                "resultType": "matrix",
                "result": [{"metric": {"__name__": "m", **LABELS}, "values": values}] if values else [],
            }
        return json.dumps({"status": "success", "data": data}).encode()


@pytest.mark.parametrize("left_open", [False, True])
def test_the_left_edge_rule_is_read_from_the_answer(left_open: bool) -> None:
    server = Server(left_open)
    assert probe_left_open(server, "m", '{job="dcgm"}', T0, T0 + 86_400_000) is left_open
    assert server.asked[0] == 'topk(1, count_over_time(m{job="dcgm"}[3600000ms]))'  # no listing of every series
    assert server.asked[-1] == 'm{gpu="0",job="dcgm"}[1ms]'


def test_no_sample_in_the_window_cannot_tell() -> None:
    assert probe_left_open(Server(True), "m", "", T0 - 7_200_000, T0 - 3_600_000) is None


def test_an_undecodable_answer_names_the_query() -> None:
    with pytest.raises(PrometheusQueryError, match=r"undecodable answer .* for query 'topk\(1, count_over_time"):
        probe_left_open(Server(True, body=b"<html>proxy login</html>"), "m", "", T0, T0 + 60_000)
    wrong = json.dumps({"status": "success", "data": {"resultType": "scalar", "result": [0, "1"]}}).encode()
    with pytest.raises(PrometheusQueryError, match="expected a vector result"):
        probe_left_open(Server(True, body=wrong), "m", "", T0, T0 + 60_000)
