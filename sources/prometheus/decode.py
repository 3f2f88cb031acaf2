"""Prometheus API response bytes -> columns, without a Python object per sample.

A matrix response, as Prometheus (and Thanos, Mimir: the same encoder) writes it::

    {"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{"__name__":"m","gpu":"0"},"values":[[1700000000,"0.5"],[1700000015.123,"NaN"]]},...]}}

Compact path: each series' small ``"metric"`` object is kept as its JSON text (the fetch
parses each distinct text once per read); its ``"values"`` list is located by byte search
(``{`` never occurs inside a values list, so the next series is one ``memchr`` away). The
lists are then parsed by pyarrow's compute kernels (``csv_values.parse_values``: int64
microseconds and float64 values, each exactly Python's ``float`` of the text, GIL released).
With ``cardhours[fast]`` installed, the fetch reads most answers with its own compiled scan
and decoder instead (``place``), and this path is its fallback.

Anything not in that exact compact layout (whitespace, other key order, native
histograms) goes to :func:`decode_matrix_json`, a plain ``json.loads`` decoder that gives
the same result or a clear error, so the fast path never guesses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from sources.prometheus.csv_values import Bounds, micros, parse_values
from sources.prometheus.errors import DecodeError
from sources.prometheus.scratch import Held, Scratch

SUCCESS_MATRIX = b'{"status":"success","data":{"resultType":"matrix","result":['
# VictoriaMetrics' cluster (vmselect) says whether storage nodes were missing; a complete
# answer is read the fast way too (a partial one is refused by the reference decoder).
COMPLETE_MATRIX = b'{"status":"success","isPartial":false,"data":{"resultType":"matrix","result":['
METRIC = b'{"metric":'
VALUES = b',"values":['


@dataclass(frozen=True)
class Matrix:
    """Series labels and their samples: series ``i`` owns the next ``counts[i]`` samples."""

    labels: list[dict[str, str]]
    counts: np.ndarray  # int64 per series
    ts_ms: np.ndarray  # int64 milliseconds since the epoch
    values: np.ndarray  # float64

    @classmethod
    def empty(cls) -> Matrix:
        return cls([], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))

    def window(self, start_ms: int, end_ms: int) -> Matrix:
        """Only samples with ``start_ms <= ts < end_ms``; series left without samples are dropped."""
        keep = (self.ts_ms >= start_ms) & (self.ts_ms < end_ms)
        if keep.all():
            return self
        owner = np.repeat(np.arange(len(self.labels)), self.counts)[keep]
        counts = np.bincount(owner, minlength=len(self.labels))
        alive = np.flatnonzero(counts)
        return Matrix([self.labels[i] for i in alive], counts[alive], self.ts_ms[keep], self.values[keep])

    def shifted(self, ms: int) -> Matrix:
        return self if ms == 0 else Matrix(self.labels, self.counts, self.ts_ms - ms, self.values)


def server_error(body: bytes) -> tuple[str | None, str | None]:
    """``(errorType, error)`` of an error response, or ``(None, None)`` when the body is not one."""
    try:
        doc = json.loads(body)
    except ValueError:
        return None, None
    if isinstance(doc, dict) and doc.get("status") == "error":
        return doc.get("errorType"), doc.get("error")
    return None, None


def _load_success(body: bytes) -> dict:
    """The parsed body of a successful response; DecodeError (with the server's reason) otherwise."""
    try:
        doc = json.loads(body)
    except ValueError as exc:
        raise DecodeError(f"response is not JSON ({exc}): {body[:200]!r}") from exc
    if not isinstance(doc, dict) or doc.get("status") != "success":
        error_type, error = (doc.get("errorType"), doc.get("error")) if isinstance(doc, dict) else (None, None)
        raise DecodeError(f"server error {error_type}: {error}", error_type, error)
    if doc.get("warnings"):
        raise DecodeError(f"server returned warnings (the data may be partial): {doc['warnings']}")
    if doc.get("isPartial") is True:  # VictoriaMetrics' cluster: some storage nodes did not answer
        raise DecodeError(
            "server answered isPartial: true (some of its storage nodes did not answer): the data may be incomplete"
        )
    return doc


def matrix_start(body: bytes | memoryview | Held) -> int | None:
    """Where the series of a successful matrix answer in the compact layout begin, or None."""
    for prefix in (SUCCESS_MATRIX, COMPLETE_MATRIX):
        if bytes(body[: len(prefix)]) == prefix:
            return len(prefix)
    return None


def _scan(body: bytes | Held) -> tuple[list[bytes], Bounds] | None:
    """Each series' ``"metric"`` object (unparsed JSON text) and where its values list is
    (``body[start:end]`` is ``[t,"v"],...,[t,"v"]``; empty when ``start == end``), or None
    when the layout is not the compact one."""
    texts: list[bytes] = []
    bounds: Bounds = []
    pos = matrix_start(body)
    if pos is None:
        return None
    if body[pos : pos + 2] == b"]}":
        return texts, bounds
    while True:
        if body[pos : pos + len(METRIC)] != METRIC:
            return None
        at = body.find(VALUES, pos)
        if at < 0:
            return None
        first = at + len(VALUES) - 1  # the values list's "["
        after = body.find(b"{", first)
        end = body.find(b"]}", first) if after < 0 else after - 3  # the values list's "]"
        if after >= 0 and body[after - 2 : after] != b"},":
            return None
        if end < 0 or body[end - 1 : end + 1] not in (b"]]", b"[]"):
            return None
        texts.append(body[pos + len(METRIC) : at])
        bounds.append((first + 1, end))
        if after < 0:
            tail = body[end + 2 :]
            return (texts, bounds) if tail.startswith(b"]}") and b'"warnings"' not in tail else None
        pos = after


def parse_labels(text: bytes) -> dict[str, str]:
    """One ``"metric"`` object; ValueError unless it is a JSON object of strings."""
    labels = json.loads(text)
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise ValueError(f"a series' labels are not a JSON object of strings: {text[:200]!r}")
    return labels


@dataclass(frozen=True)
class Columns:
    """The compact path's result before labels are parsed: series ``i`` (its ``"metric"`` JSON
    text) owns the next ``counts[i]`` samples; series without samples are left out."""

    texts: list[bytes]
    counts: np.ndarray  # int64 per series
    ts_us: np.ndarray  # int64 microseconds since the epoch, less the ``shift_ms`` asked for
    values: np.ndarray  # float64


def decode_matrix(body: bytes) -> Matrix:
    """A matrix response (``/api/v1/query`` of a range selector, ``/api/v1/query_range``)."""
    columns = decode_columns(body)
    if isinstance(columns, Matrix):
        return columns
    try:
        labels = [parse_labels(text) for text in columns.texts]
    except ValueError:
        return decode_matrix_json(body)
    return Matrix(labels, columns.counts, columns.ts_us // 1000, columns.values)


def decode_columns(body: bytes | Held, shift_ms: int = 0, scratch: Scratch | None = None) -> Columns | Matrix:
    """:class:`Columns` of a matrix response in the compact layout (timestamps less
    ``shift_ms``, from ``scratch`` when given; values lists parsed by pyarrow's compute kernels,
    ``csv_values``), else the :func:`decode_matrix_json` result (or its DecodeError; unshifted)."""
    scanned = _scan(body)
    if scanned is None:
        return decode_matrix_json(bytes(body))
    texts, bounds = scanned
    full = [(a, b) for a, b in bounds if a < b]
    if not full:
        return Columns([], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))
    if len(full) < len(texts):
        texts = [text for text, (a, b) in zip(texts, bounds, strict=True) if a < b]
    parsed = parse_values(body, full)
    if parsed is None:  # a values list not of [t,"v"] samples of numbers: the reference decoder says what
        return decode_matrix_json(bytes(body))
    counts, seconds, values = parsed
    return Columns(texts, counts, micros(seconds, shift_ms, scratch), values)


def decode_matrix_json(body: bytes) -> Matrix:
    """The same result as :func:`decode_matrix` through ``json.loads`` (slow; any valid layout)."""
    data = _load_success(body).get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        kind = data.get("resultType") if isinstance(data, dict) else None
        raise DecodeError(f"expected a matrix result, got {kind!r}")
    labels, counts, ts, values = [], [], [], []
    for series in data["result"]:
        if series.get("histograms"):
            raise DecodeError(f"native histogram samples are not supported (series {series['metric']})")
        points = series.get("values") or []
        if points:
            try:
                ts.extend(round(float(t) * 1000) for t, _ in points)
                values.extend(float(v) for _, v in points)
            except (TypeError, ValueError) as exc:
                raise DecodeError(f'a sample is not [timestamp, "value"] ({exc}) in series {series["metric"]}') from exc
            labels.append(series["metric"])
            counts.append(len(points))
    return Matrix(labels, np.array(counts, np.int64), np.array(ts, np.int64), np.array(values, np.float64))


def decode_data(body: bytes) -> object:
    """The ``data`` member of a successful response (series lists, label values, build info)."""
    return _load_success(body).get("data")


def decode_label_sets(body: bytes) -> list[dict[str, str]]:
    """The label sets of an ``/api/v1/series`` response."""
    data = decode_data(body)
    if not isinstance(data, list):
        raise DecodeError(f"expected a list of series, got {type(data).__name__}")
    return data
