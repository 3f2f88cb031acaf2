"""``fetch.fetch_all`` without a server: answers written as Prometheus writes them, served by a
``PrometheusClient`` whose HTTP transport (``get``) is replaced; everything else is the real
read path (planning callbacks, pools, decoding by either decoder, errors)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping

import pytest

from sources.prometheus import decode, fetch
from sources.prometheus.client import PrometheusClient, PrometheusQueryError
from sources.prometheus.plan import Census, Request
from tests.support.decoders import BOTH_DECODERS, NEEDS_NUMBA

HOUR_MS = 3_600_000
STEP_S = 60
HOSTS = ("h1", "h2", "h3")
TOO_MANY = "query processing would load too many samples into memory in query execution"


def answer(metric: str, query: str, time_s: float, hosts: tuple[str, ...], wrong_name: str | None = None) -> bytes:
    """A range selector's answer: each host's series, one sample a minute in ``[time - range, time]``."""
    range_ms = int(query.rsplit("[", 1)[1].removesuffix("ms]"))
    end_ms = round(time_s * 1000)
    first = -(-(end_ms - range_ms) // (STEP_S * 1000)) * STEP_S
    shard = re.search(r'Hostname=~"([^"]*)"', query)
    result = []
    for host in hosts:
        if shard is not None and host not in shard.group(1).split("|"):
            continue
        values = [[t, str(t % 7)] for t in range(first, end_ms // 1000 + 1, STEP_S)]
        labels = {"__name__": wrong_name or metric, "Hostname": host, "gpu": "0"}
        result.append({"metric": labels, "values": values})
    body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
    return json.dumps(body, separators=(",", ":")).encode()


class Recorded(PrometheusClient):
    """Answers from :func:`answer`; refuses queries spanning more than ``refuse_above_ms``
    for all hosts, as Prometheus does past ``--query.max-samples``; records the calling threads."""

    def __init__(
        self, refuse_above_ms: int | None = None, wrong_name: str | None = None, partial: bool | None = None
    ) -> None:
        super().__init__("http://prometheus.invalid:9090")
        self.refuse_above_ms, self.wrong_name, self.partial = refuse_above_ms, wrong_name, partial
        self.get_threads: list[str] = []

    def get(self, path: str, params: Mapping[str, str], *, query: str, window: str, into=None) -> bytes:
        self.get_threads.append(threading.current_thread().name)
        range_ms = int(query.rsplit("[", 1)[1].removesuffix("ms]"))
        if self.refuse_above_ms is not None and range_ms > self.refuse_above_ms and "=~" not in query:
            raise PrometheusQueryError(
                f"refused: {TOO_MANY}",
                url=self.url + path,
                query=query,
                window=window,
                status=422,
                error=TOO_MANY,
                attempts=1,
            )
        body = answer("m", query, float(params["time"]), HOSTS, self.wrong_name)
        if self.partial is not None:  # as VictoriaMetrics' cluster writes it
            body = body.replace(b'"success",', b'"success","isPartial":%s,' % str(self.partial).lower().encode(), 1)
        return body


def read(client: Recorded, hours: int = 4, chunk_hours: int = 2, decoder: str = "pyarrow"):
    census = Census("m", tuple(("Hostname", host, 1) for host in HOSTS))
    end = hours * HOUR_MS

    def plan(found: Census, a: int, b: int) -> list[Request]:
        step = chunk_hours * HOUR_MS
        return [Request("m", t, min(t + step, b), found.total) for t in range(a, b, step)]

    return fetch.fetch_all(
        client,
        [("m", 0, end)],
        probe=lambda metric, a, b: census,
        plan=plan,
        selector="",
        max_parallel=2,
        min_span_ms=STEP_S * 1000,
        decoder=decoder,
    )


@BOTH_DECODERS
def test_every_sample_comes_back_once_in_order(decoder: str) -> None:
    _, long, stats = read(Recorded(), decoder=decoder)
    assert long.series.height == len(HOSTS) and stats.answered == 2 and stats.refused == 0
    assert stats.decoder == decoder and stats.fallbacks == 0
    per_series = long.samples.group_by("series_id").len()["len"].to_list()
    assert per_series == [4 * 60] * len(HOSTS)  # [0, 4 h) at one a minute; the sample at 4 h is outside
    assert long.samples.equals(long.samples.sort("series_id", "ts"))
    assert long.samples["ts"].n_unique() == 4 * 60


@pytest.mark.parametrize(
    "decoder, step", [pytest.param("numba", "scan", marks=NEEDS_NUMBA), ("pyarrow", "decode_chunk")]
)
def test_bodies_are_fetched_on_the_request_threads_and_taken_on_the_decoding_thread(
    monkeypatch, decoder: str, step: str
) -> None:
    scanned_on: list[str] = []
    real = getattr(fetch, step)

    def scan(*args, **kwargs):
        scanned_on.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(fetch, step, scan)
    client = Recorded()
    read(client, hours=6, decoder=decoder)
    assert len(scanned_on) == 3 and all(name.startswith("prometheus-decode") for name in scanned_on)
    assert client.get_threads and all(name.startswith("prometheus_") for name in client.get_threads)


@BOTH_DECODERS
def test_refused_request_is_split_by_host_and_answered(decoder: str) -> None:
    _, long, stats = read(Recorded(refuse_above_ms=HOUR_MS), hours=2, chunk_hours=2, decoder=decoder)
    assert stats.refused >= 1 and stats.answered >= 2 and stats.max_splits >= 1
    assert long.samples.height == 2 * 60 * len(HOSTS)


@BOTH_DECODERS
def test_answer_with_another_metric_fails_naming_query_and_window(decoder: str) -> None:
    with pytest.raises(
        PrometheusQueryError,
        match=r"undecodable answer from http://prometheus.invalid:9090"
        r"/api/v1/query for query 'm\[",
    ) as caught:
        read(Recorded(wrong_name="other"), decoder=decoder)
    assert "asked for m" in str(caught.value) and "1970-01-01" in caught.value.window


@BOTH_DECODERS
def test_a_partial_answer_fails_the_read_a_complete_one_reads_as_usual(monkeypatch, decoder: str) -> None:
    with pytest.raises(PrometheusQueryError, match="isPartial: true"):
        read(Recorded(partial=True), decoder=decoder)

    def reference(*args, **kwargs):
        raise AssertionError("a complete answer is read the compact way, not by json.loads")

    monkeypatch.setattr(decode, "decode_matrix_json", reference)
    _, long, stats = read(Recorded(partial=False), decoder=decoder)
    assert stats.fallbacks == 0
    _, usual, _ = read(Recorded(), decoder=decoder)
    assert long.samples.equals(usual.samples) and long.series.equals(usual.series)
