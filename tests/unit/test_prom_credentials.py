"""Credentials reach the server only from the environment variables the config names: never
from the URL or ~/.netrc, and never into an error message (a real local peer, a closed port)."""

from __future__ import annotations

from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from cardhours.bench.prometheus_server import free_port
from sources.prometheus.client import PrometheusClient, PrometheusQueryError
from tests.unit.test_prom_client import PARAMS, WINDOW, client_for, peer, url  # noqa: F401  (peer: the fixture)

BEARER = {"Authorization": "Bearer s3cret"}


def _with_userinfo(server: ThreadingHTTPServer) -> str:
    return url(server).replace("http://", "http://intruder:hunter2@")


def _sent_authorization(server: ThreadingHTTPServer, client: PrometheusClient) -> str | None:
    client.get("/api/v1/query", PARAMS, query="q", window="w")
    return server.script.seen[-1]["headers"].get("Authorization")  # type: ignore[attr-defined]


def test_user_info_in_the_url_never_replaces_the_configured_token(peer: ThreadingHTTPServer) -> None:
    assert _sent_authorization(peer, PrometheusClient(_with_userinfo(peer), headers=BEARER)) == "Bearer s3cret"
    assert _sent_authorization(peer, PrometheusClient(_with_userinfo(peer))) is None
    basic = PrometheusClient(_with_userinfo(peer), auth=("alice", "pw"))
    assert _sent_authorization(peer, basic) == "Basic YWxpY2U6cHc="
    assert basic.url == url(peer)


def test_netrc_is_not_read(peer: ThreadingHTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login intruder password hunter2\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    assert _sent_authorization(peer, PrometheusClient(url(peer), headers=BEARER)) == "Bearer s3cret"
    assert _sent_authorization(peer, PrometheusClient(url(peer))) is None


def test_a_failed_request_does_not_print_the_password() -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(PrometheusQueryError) as caught:
        client_for(f"http://intruder:hunter2@127.0.0.1:{port}", []).get(
            "/api/v1/query", PARAMS, query=PARAMS["query"], window=WINDOW
        )
    message = str(caught.value)
    assert message.startswith(
        f"Prometheus request failed after 4 attempt(s): http://127.0.0.1:{port}/api/v1/query "
        f"query {PARAMS['query']!r} window {WINDOW}: no HTTP response: ConnectionError"
    )
    assert caught.value.url == f"http://127.0.0.1:{port}/api/v1/query"
    for secret in ("hunter2", "intruder"):
        assert secret not in message and secret not in caught.value.error
