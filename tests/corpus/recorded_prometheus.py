"""A throwaway HTTP peer on 127.0.0.1 answering the Prometheus API calls cardhours makes
(``/api/v1/series`` and range-selector ``/api/v1/query``) from recorded series, written the
way Prometheus writes them (compact JSON, labels sorted by name, values as strings).

``answer(path, query)`` may return ``(status, body)`` to replace the normal answer (an error,
a refusal, a body cut short, a proxy's HTML page); None keeps it. Nothing of cardhours is
replaced: the client, planning, decoding and merging all run for real against this peer.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

Answer = Callable[[str, str], "tuple[int, bytes] | None"]
_SELECTOR = re.compile(r"^(\w+)(?:\{(.*)\})?(?:\[(\d+)ms\])?$")
_MATCHER = re.compile(r'(\w+)(=~|=)"((?:[^"\\]|\\.)*)"')


@dataclass
class Series:
    labels: dict[str, str]  # with __name__
    samples: list[tuple[float, str]]  # (seconds, value as Prometheus writes it)


def matches(selector: str, labels: dict[str, str]) -> bool:
    """``metric{a="x",b=~"y|z"}`` (the matchers cardhours sends) against one label set."""
    name, inner, _ = _SELECTOR.match(selector).groups()
    if labels["__name__"] != name:
        return False
    for label, op, raw in _MATCHER.findall(inner or ""):
        value, have = raw.replace('\\"', '"').replace("\\\\", "\\"), labels.get(label, "")
        if not (re.fullmatch(value, have) if op == "=~" else have == value):
            return False
    return True


def success(data: object) -> bytes:
    return json.dumps({"status": "success", "data": data}, separators=(",", ":"), ensure_ascii=False).encode()


def matrix(result: list[tuple[dict[str, str], list[tuple[float, str]]]]) -> bytes:
    series = [
        {"metric": dict(sorted(labels.items())), "values": [[t, v] for t, v in values]} for labels, values in result
    ]
    return success({"resultType": "matrix", "result": series})


@dataclass
class Recorded:
    series: list[Series]
    answer: Answer = lambda path, query: None  # noqa: E731 - a dataclass default: a def would need a name outside the class

    def respond(self, path: str, params: dict[str, str]) -> tuple[int, bytes]:
        query = params.get("query") or params.get("match[]", "")
        if (special := self.answer(path, query)) is not None:
            return special
        if path == "/api/v1/series":
            start, end = float(params["start"]), float(params["end"])
            return 200, success(
                [
                    dict(sorted(s.labels.items()))
                    for s in self.series
                    if matches(query, s.labels) and any(start <= t <= end for t, _ in s.samples)
                ]
            )
        range_ms = int(_SELECTOR.match(query).group(3))
        end = float(params["time"])
        start = end - range_ms / 1000
        picked = [
            (s.labels, [(t, v) for t, v in s.samples if start <= t <= end])
            for s in self.series
            if matches(query.rsplit("[", 1)[0], s.labels)
        ]
        return 200, matrix([(labels, values) for labels, values in picked if values])


class _Handler(BaseHTTPRequestHandler):
    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        form = self.rfile.read(length).decode() if length else urlsplit(self.path).query
        params = {k: v[0] for k, v in parse_qs(form).items()}
        status, body = self.server.recorded.respond(urlsplit(self.path).path, params)  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _serve

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serving(recorded: Recorded) -> Iterator[str]:
    """The peer's URL while the ``with`` block runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.recorded = recorded  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
