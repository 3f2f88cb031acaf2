"""The HTTP client against a throwaway local HTTP server (a real peer on 127.0.0.1) that
answers from a script: retries, Retry-After, errors that name everything, auth, POST."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from cardhours.bench.prometheus_server import free_port
from config.cluster import PrometheusConfig
from sources.metrics import MetricsSourceError
from sources.prometheus.client import Backoff, PrometheusClient, PrometheusQueryError, retry_after_seconds

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "prometheus"
MATRIX = (FIXTURES / "matrix_edge.json").read_bytes()
BAD_QUERY = (FIXTURES / "error_bad_data.json").read_bytes()
TOO_MANY = (FIXTURES / "error_too_many_samples.json").read_bytes()
# VictoriaMetrics 1.79's refusal (tests/integration/test_victoria_metrics.py meets the real one)
VICTORIA_TOO_MANY = json.dumps(
    {
        "status": "error",
        "errorType": "422",
        "error": (
            'error when exporting data for query="DCGM_FI_DEV_GPU_UTIL" on the time range (start=1772409600000, '
            'end=1772496000000): cannot fetch data for "filters=[{__name__=\\"DCGM_FI_DEV_GPU_UTIL\\"}], '
            'timeRange=[2026-03-02T00:00:00Z..2026-03-03T00:00:00Z]": cannot select more than '
            "-search.maxSamplesPerQuery=200000 samples; possible solutions: to increase the "
            "-search.maxSamplesPerQuery; to reduce time range for the query; to use more specific label filters "
            "in order to select lower number of series"
        ),
    }
).encode()
PARAMS = {"query": "DCGM_FI_PROF_SM_ACTIVE[120001ms]", "time": "1772409720.000"}
WINDOW = "[2026-03-02T00:00:00.000Z, 2026-03-02T00:02:00.000Z)"


class Script:
    """Answers (status, headers, body) in order, the last one repeated; records what came in."""

    def __init__(self, *answers: tuple[int, dict[str, str], bytes]) -> None:
        self.answers = list(answers)
        self.seen: list[dict] = []


class Handler(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        script: Script = self.server.script  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        form = self.rfile.read(length).decode() if length else ""
        script.seen.append(
            {
                "method": self.command,
                "path": urlsplit(self.path).path,
                "headers": dict(self.headers),
                "params": parse_qs(urlsplit(self.path).query or form),
            }
        )
        status, headers, body = script.answers[min(len(script.seen), len(script.answers)) - 1]
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", "Content-Length": str(len(body)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = int(headers.get("Content-Length", len(body))) != len(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def peer() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.script = Script((200, {}, MATRIX))  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def client_for(target: str, sleeps: list[float], **options: object) -> PrometheusClient:
    return PrometheusClient(
        target, max_retries=3, timeout_seconds=5, backoff=Backoff(rng=random.Random(1)), sleep=sleeps.append, **options
    )


def test_retries_503_then_returns_the_body(peer: ThreadingHTTPServer) -> None:
    peer.script = Script((503, {}, b"overloaded"), (503, {}, b"overloaded"), (200, {}, MATRIX))
    sleeps: list[float] = []
    assert client_for(url(peer), sleeps).get("/api/v1/query", PARAMS, query=PARAMS["query"], window=WINDOW) == MATRIX
    assert len(peer.script.seen) == 3
    assert 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0  # exponential, jittered


def test_a_cut_off_body_is_retried_never_returned(peer: ThreadingHTTPServer) -> None:
    peer.script = Script((200, {"Content-Length": str(len(MATRIX) * 2)}, MATRIX), (200, {}, MATRIX))
    sleeps: list[float] = []
    assert client_for(url(peer), sleeps).get("/api/v1/query", PARAMS, query=PARAMS["query"], window=WINDOW) == MATRIX
    assert len(peer.script.seen) == 2 and len(sleeps) == 1


def test_429_waits_what_retry_after_says(peer: ThreadingHTTPServer) -> None:
    peer.script = Script((429, {"Retry-After": "2"}, b"slow down"), (200, {}, MATRIX))
    sleeps: list[float] = []
    client_for(url(peer), sleeps).get("/api/v1/query", PARAMS, query=PARAMS["query"], window=WINDOW)
    assert sleeps == [2.0]
    later = formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after_seconds(later) <= 31 and retry_after_seconds("soon") is None


def test_gives_up_after_max_retries_naming_url_query_window_status_and_error(peer: ThreadingHTTPServer) -> None:
    peer.script = Script((502, {}, b"<html>bad gateway</html>"))
    sleeps: list[float] = []
    with pytest.raises(PrometheusQueryError) as caught:
        client_for(url(peer), sleeps).get("/api/v1/query", PARAMS, query=PARAMS["query"], window=WINDOW)
    message = str(caught.value)
    for part in (url(peer) + "/api/v1/query", PARAMS["query"], WINDOW, "HTTP 502", "bad gateway", "4 attempt"):
        assert part in message
    assert len(peer.script.seen) == 4 and len(sleeps) == 3


@pytest.mark.parametrize(
    "status, body, text, too_many",
    [
        (400, BAD_QUERY, "unclosed left bracket", False),
        (422, TOO_MANY, "query processing would load too many samples into memory", True),
        (422, VICTORIA_TOO_MANY, r"cannot select more than -search.maxSamplesPerQuery=200000 samples", True),
    ],
)
def test_query_errors_are_not_retried(
    peer: ThreadingHTTPServer, status: int, body: bytes, text: str, too_many: bool
) -> None:
    peer.script = Script((status, {}, body))
    with pytest.raises(PrometheusQueryError, match=text) as caught:
        client_for(url(peer), []).get("/api/v1/query", PARAMS, query=PARAMS["query"], window=WINDOW)
    assert len(peer.script.seen) == 1
    assert caught.value.status == status and caught.value.too_many_samples is too_many
    assert f"HTTP {status}" in str(caught.value)


def test_unreachable_server_fails_after_retries_without_an_http_status() -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    sleeps: list[float] = []
    with pytest.raises(PrometheusQueryError) as caught:
        client_for(closed, sleeps).get("/api/v1/query", PARAMS, query=PARAMS["query"], window=WINDOW)
    assert caught.value.status is None and caught.value.attempts == 4 and len(sleeps) == 3
    assert closed in str(caught.value) and PARAMS["query"] in str(caught.value)
    assert "no HTTP response" in str(caught.value)


def test_tls_failures_are_not_retried(peer: ThreadingHTTPServer) -> None:
    sleeps: list[float] = []
    with pytest.raises(PrometheusQueryError, match="SSLError") as caught:  # https to a plain-HTTP peer
        client_for(url(peer).replace("http:", "https:"), sleeps).get("/api/v1/query", PARAMS, query="q", window="w")
    assert caught.value.attempts == 1 and sleeps == []


def test_credentials_come_from_the_named_environment_variables(peer: ThreadingHTTPServer) -> None:
    bearer = PrometheusConfig(url=url(peer), bearer_token_env="PROM_TOKEN")
    PrometheusClient.from_config(bearer, {"PROM_TOKEN": "s3cret"}).get("/api/v1/query", PARAMS, query="q", window="w")
    assert peer.script.seen[-1]["headers"]["Authorization"] == "Bearer s3cret"
    basic = PrometheusConfig(url=url(peer), basic_auth_user_env="U", basic_auth_password_env="P")
    PrometheusClient.from_config(basic, {"U": "alice", "P": "pw"}).get("/api/v1/query", PARAMS, query="q", window="w")
    assert peer.script.seen[-1]["headers"]["Authorization"] == "Basic YWxpY2U6cHc="
    with pytest.raises(MetricsSourceError, match="PROM_TOKEN"):
        PrometheusClient.from_config(bearer, {})


def test_tls_settings_reach_the_session(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    with_ca = PrometheusConfig(url="https://prom.example:9090", ca_bundle=str(bundle))
    assert PrometheusClient.from_config(with_ca, {})._session.verify == str(bundle)
    insecure = PrometheusConfig(url="https://prom.example:9090", verify_tls=False, ca_bundle=str(bundle))
    assert PrometheusClient.from_config(insecure, {})._session.verify is False


def test_long_queries_are_posted_and_compression_is_optional(peer: ThreadingHTTPServer) -> None:
    hosts = "|".join(f"gpu-{i:05d}" for i in range(1000))
    long = {"query": f'DCGM_FI_PROF_SM_ACTIVE{{Hostname=~"{hosts}"}}[1h]', "time": "1772409720.000"}
    client_for(url(peer), []).get("/api/v1/query", long, query=long["query"], window=WINDOW)
    assert peer.script.seen[-1]["method"] == "POST" and peer.script.seen[-1]["params"]["query"] == [long["query"]]
    client_for(url(peer), []).get("/api/v1/query", PARAMS, query="q", window="w")
    assert peer.script.seen[-1]["method"] == "GET" and peer.script.seen[-1]["headers"]["Accept-Encoding"] == "identity"
    client_for(url(peer), [], compress=True).get("/api/v1/query", PARAMS, query="q", window="w")
    assert "gzip" in peer.script.seen[-1]["headers"]["Accept-Encoding"]


def test_backoff_is_capped_and_jittered() -> None:
    backoff = Backoff(base_seconds=1.0, cap_seconds=8.0, rng=random.Random(7))
    delays = [backoff.delay(n, None) for n in range(8)]
    assert all(min(8.0, 2**n) / 2 <= d <= min(8.0, 2**n) for n, d in enumerate(delays))
    assert len({round(d, 6) for d in delays[4:]}) > 1  # jitter: capped delays still differ
    assert backoff.delay(0, 1_000.0) == 300.0


def test_error_answers_keep_the_servers_json_reason(peer: ThreadingHTTPServer) -> None:
    peer.script = Script(
        (
            503,
            {},
            json.dumps(
                {"status": "error", "errorType": "timeout", "error": "query timed out in query execution"}
            ).encode(),
        )
    )
    with pytest.raises(PrometheusQueryError, match="timeout: query timed out"):
        client_for(url(peer), []).get("/api/v1/query", PARAMS, query="q", window="w")
