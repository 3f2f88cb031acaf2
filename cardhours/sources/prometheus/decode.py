"""Prometheus API response bytes -> columns, without a Python object per sample.

A matrix response, as Prometheus (and Thanos, Mimir: the same encoder) writes it::

    {"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{"__name__":"m","gpu":"0"},"values":[[1700000000,"0.5"],[1700000015.123,"NaN"]]},...]}}

Fast path: each series' small ``"metric"`` object is kept as its JSON text (the fetch
parses each distinct text once per read); its ``"values"`` list is located by byte search
(``{`` never occurs inside a values list, so the next series is one ``memchr`` away). The
lists are then read by a numba kernel (``jit_values.read_lists``: int64 microseconds and
float64 values, each exactly Python's ``float`` of the text, written straight into
preallocated arrays with the GIL released); where it does not read the layout, pyarrow's
CSV reader does (``csv_values.parse_values_csv``: the same result).

Anything not in that exact compact layout (whitespace, other key order, native
histograms) goes to :func:`decode_matrix_json`, a plain ``json.loads`` decoder that gives
the same result or a clear error, so the fast path never guesses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from cardhours.sources.prometheus.csv_values import (  # noqa: F401  (csv_text: benchmarks/prom_decode.py)
    Bounds,
    csv_text,
    micros,
    parse_values_csv,
    pooled,
)
from cardhours.sources.prometheus.errors import DecodeError
from cardhours.sources.prometheus.scratch import Scratch

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


def matrix_start(body: bytes | memoryview) -> int | None:
    """Where the series of a successful matrix answer in the compact layout begin, or None."""
    for prefix in (SUCCESS_MATRIX, COMPLETE_MATRIX):
        if bytes(body[: len(prefix)]) == prefix:
            return len(prefix)
    return None


def _scan(body: bytes) -> tuple[list[bytes], Bounds] | None:
    """Each series' ``"metric"`` object (unparsed JSON text) and where its values list is
    (``body[start:end]`` is ``[t,"v"],...,[t,"v"]``; empty when ``start == end``), or None
    when the layout is not the compact one."""
    texts: list[bytes] = []
    bounds: Bounds = []
    pos = matrix_start(body)
    if pos is None:
        return None
    if body.startswith(b"]}", pos):
        return texts, bounds
    while True:
        if not body.startswith(METRIC, pos):
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


def _locate(body: bytes) -> tuple[list[dict[str, str]], list[memoryview], list[bool]] | None:
    """Labels and values lists of every series, or None when the layout is not the compact one
    (for ``benchmarks/prom_decode.py``)."""
    scanned = _scan(body)
    if scanned is None:
        return None
    texts, bounds = scanned
    view = memoryview(body)
    try:
        labels = [parse_labels(text) for text in texts]
    except ValueError:
        return None
    return labels, [view[a:b] for a, b in bounds], [a == b for a, b in bounds]


def parse_values(
    body: bytes, bounds: Bounds, shift_ms: int = 0, scratch: Scratch | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(samples per list, timestamps as int64 microseconds less ``shift_ms``, values) of the
    values lists ``body[start:end]`` (none empty): :func:`jit_values.read_lists`, or
    :func:`parse_values_csv` when that kernel does not read the layout. The kernel's arrays
    come from ``scratch`` when given (else Arrow's pool)."""
    from cardhours.sources.prometheus import jit_values  # imports numba (about 0.7 s): only when decoding

    take = pooled if scratch is None else scratch.take

    starts = np.fromiter((a for a, _ in bounds), np.int64, len(bounds))
    ends = np.fromiter((b for _, b in bounds), np.int64, len(bounds))
    room = jit_values.max_samples(starts, ends)
    ts_us, values, counts = take(room, np.int64), take(room, np.float64), np.empty(len(bounds), np.int64)
    slow = np.empty((max(1024, room // 64), 3), np.int64)
    status, n, n_slow, _ = jit_values.read_lists(
        np.frombuffer(body, np.uint8), jit_values.words_of(body), starts, ends, shift_ms, ts_us, values, counts, slow
    )
    if status == jit_values.OK and jit_values.finish_slow(body, slow[:n_slow], values):
        return counts, ts_us[:n], values[:n]
    if scratch is not None:
        scratch.give(ts_us, values)
    counts, seconds, values = parse_values_csv(body, bounds)
    return counts, micros(seconds, shift_ms), values


@dataclass(frozen=True)
class Columns:
    """The fast path's result before labels are parsed: series ``i`` (its ``"metric"`` JSON
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


def decode_columns(body: bytes, shift_ms: int = 0, scratch: Scratch | None = None) -> Columns | Matrix:
    """:class:`Columns` of a matrix response in the compact layout (timestamps less
    ``shift_ms``; arrays from ``scratch`` when given), else the :func:`decode_matrix_json`
    result (or its DecodeError; unshifted)."""
    scanned = _scan(body)
    if scanned is None:
        return decode_matrix_json(body)
    texts, bounds = scanned
    full = [(a, b) for a, b in bounds if a < b]
    if not full:
        return Columns([], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))
    if len(full) < len(texts):
        texts = [text for text, (a, b) in zip(texts, bounds, strict=True) if a < b]
    return Columns(texts, *parse_values(body, full, shift_ms, scratch))


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
            labels.append(series["metric"])
            counts.append(len(points))
            ts.extend(round(float(t) * 1000) for t, _ in points)
            values.extend(float(v) for _, v in points)
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
