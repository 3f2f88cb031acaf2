"""A real HTTP endpoint on loopback that takes chat-webhook posts, for the tests.

``WebhookServer(status=200)`` listens on a free port of 127.0.0.1; every POST body is parsed as
JSON into ``posts``, and answered with ``status``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.slurm_harness.procs import free_port


class WebhookServer:
    def __init__(self, status: int = 200) -> None:
        self.status, self.port = status, free_port()
        self.posts: list[dict] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/alerts"

    def __enter__(self) -> WebhookServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                owner.posts.append(json.loads(body))
                self.send_response(owner.status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: object) -> None:  # quiet: the test reads posts
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
