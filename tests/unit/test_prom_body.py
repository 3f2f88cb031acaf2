"""Response bodies read into reusable buffers (``body.read_into`` through ``PrometheusClient.get``),
against a local HTTP server on 127.0.0.1 that answers chunked, with a length, or gzipped."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from cardhours.bench.prometheus_server import free_port
from sources.prometheus.client import PrometheusClient, PrometheusQueryError
from sources.prometheus.scratch import Scratch

BODY = bytes(range(256)) * 40_000  # 10 MB: more than the first guess of 4 MiB


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the next request reuses the connection

    def do_GET(self) -> None:
        mode = self.path.strip("/").split("?")[0]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if mode == "short":  # promises more than it sends, then closes
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY[:1000])
            self.close_connection = True
            return
        if mode == "broken":  # a chunk cut off mid-way
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"100000\r\n" + BODY[:1000])
            self.close_connection = True
            return
        if mode == "gzip":
            data = gzip.compress(BODY)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif mode == "length":
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)
        else:  # chunked, in uneven pieces
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for at in range(0, len(BODY), 777_777):
                piece = BODY[at : at + 777_777]
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("mode", ["chunked", "length"])
def test_a_body_is_read_into_a_scratch_buffer_whole(server: str, mode: str) -> None:
    client, scratch = PrometheusClient(server), Scratch()
    body = client.get(f"/{mode}", {}, query="q", window="w", into=scratch)
    assert isinstance(body, np.ndarray) and body.dtype == np.uint8
    assert body.tobytes() == BODY
    assert client.get(f"/{mode}", {}, query="q", window="w") == BODY  # and as bytes without a scratch


def test_given_back_buffers_carry_the_next_bodies(server: str) -> None:
    client, scratch = PrometheusClient(server), Scratch()
    first = client.get("/chunked", {}, query="q", window="w", into=scratch)
    grown = scratch.allocated  # 4 MiB guess, then 8 and 16 MiB as the body outgrew them
    scratch.give(first)
    assert scratch.body_guess() >= len(BODY)  # later bodies start big enough
    for _ in range(3):
        again = client.get("/chunked", {}, query="q", window="w", into=scratch)
        assert again.tobytes() == BODY
        scratch.give(again)
    assert scratch.allocated == grown  # no new memory: the same buffers again


def test_a_compressed_body_is_read_as_bytes(server: str) -> None:
    client = PrometheusClient(server, compress=True)
    body = client.get("/gzip", {}, query="q", window="w", into=Scratch())
    assert body == BODY and isinstance(body, bytes)


@pytest.mark.parametrize("mode", ["short", "broken"])
def test_a_body_cut_short_is_retried_then_fails_naming_the_request(server: str, mode: str) -> None:
    sleeps: list[float] = []
    client = PrometheusClient(server, max_retries=2, sleep=sleeps.append)
    scratch = Scratch()
    with pytest.raises(PrometheusQueryError, match=f"after 3 attempt.*{mode}.*no HTTP response"):
        client.get(f"/{mode}", {}, query="q", window="w", into=scratch)
    assert len(sleeps) == 2
    assert scratch.allocated > 0 and scratch.held() == 0  # every failed read gave its buffer back
