"""Prometheus API response bytes -> columns, without a Python object per sample.

A matrix response, as Prometheus (and Thanos, Mimir: the same encoder) writes it::

    {"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{"__name__":"m","gpu":"0"},"values":[[1700000000,"0.5"],[1700000015.123,"NaN"]]},...]}}

Fast path: only each series' small ``"metric"`` object goes through ``json.loads``; its
``"values"`` list is located by byte search (``{`` never occurs inside a values list, so
the next series is one ``memchr`` away). The lists, without their outer brackets, are
joined with ``,1`` and rewritten by one ``bytes.translate`` (``[`` -> newline, ``]`` and
quotes dropped) into CSV rows::

    1700000000,0.5,
    1700000015.123,NaN,1       <- "1" marks the last row of a series

which pyarrow's multi-threaded CSV reader parses (GIL released) into float64 columns;
it reads ``NaN``, ``+Inf``, ``-Inf`` and exponents, correctly rounded. Timestamps are
decimal seconds with at most three decimals, so ``rint(seconds * 1000)`` is the exact
millisecond. ``benchmarks/prom_decode.py`` measures this against alternatives.

Anything not in that exact compact layout (whitespace, other key order, native
histograms) goes to :func:`decode_matrix_json`, a plain ``json.loads`` decoder that gives
the same result or a clear error, so the fast path never guesses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

SUCCESS_MATRIX = b'{"status":"success","data":{"resultType":"matrix","result":['
METRIC = b'{"metric":'
VALUES = b',"values":['
SERIES_END = b",1"  # joins values lists: marks the last CSV row of each series
TO_CSV = bytes.maketrans(b"[", b"\n")
TO_CSV_DROP = b'"]'
_READ = pacsv.ReadOptions(column_names=["t", "v", "last"], block_size=1 << 22)
_PARSE = pacsv.ParseOptions(quote_char=False)
_CONVERT = pacsv.ConvertOptions(column_types={"t": pa.float64(), "v": pa.float64(), "last": pa.int8()},
                                null_values=[""])


class DecodeError(ValueError):
    """The response is not a successful matrix (or series list); ``error_type``/``error`` when the
    server said why."""

    def __init__(self, message: str, error_type: str | None = None, error: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.error = error


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
    return doc


def _locate(body: bytes) -> tuple[list[dict[str, str]], list[memoryview], list[bool]] | None:
    """Labels and values lists of every series, or None when the layout is not the compact one."""
    labels: list[dict[str, str]] = []
    spans: list[memoryview] = []
    empty: list[bool] = []
    view = memoryview(body)
    pos = len(SUCCESS_MATRIX)
    if body.startswith(b"]}", pos):
        return labels, spans, empty
    while True:
        if not body.startswith(METRIC, pos):
            return None
        at = body.find(VALUES, pos)
        if at < 0:
            return None
        try:
            metric = json.loads(body[pos + len(METRIC):at])
        except ValueError:
            return None
        first = at + len(VALUES) - 1  # the values list's "["
        after = body.find(b"{", first)
        end = body.find(b"]}", first) if after < 0 else after - 3  # the values list's "]"
        if after >= 0 and body[after - 2:after] != b"},":
            return None
        if end < 0 or body[end - 1:end + 1] not in (b"]]", b"[]"):
            return None
        labels.append(metric)
        empty.append(end == first + 1)
        spans.append(view[first + 1:end])  # [t,"v"],...,[t,"v"]
        if after < 0:
            tail = body[end + 2:]
            return (labels, spans, empty) if tail.startswith(b"]}") and b'"warnings"' not in tail else None
        pos = after


def csv_text(lists: list[memoryview]) -> bytes:
    """Values lists (``[t,"v"],[t,"v"]``, outer brackets removed) as ``t,v,`` rows, the last
    row of each list ending in ``1``; the text starts with an empty line (pyarrow skips it).
    Two passes over the bytes: the join and the translation."""
    return SERIES_END.join([*lists, b""]).translate(TO_CSV, TO_CSV_DROP)


def _parse_rows(lists: list[memoryview]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(samples per series, timestamps in ms, values) of non-empty values lists."""
    table = pacsv.read_csv(pa.BufferReader(csv_text(lists)), read_options=_READ, parse_options=_PARSE,
                           convert_options=_CONVERT)
    if table.column("t").null_count or table.column("v").null_count:
        raise DecodeError("a sample without a timestamp or value in the values lists")
    ends = np.flatnonzero(table.column("last").is_valid().to_numpy(zero_copy_only=False))
    if len(ends) != len(lists) or (len(ends) and ends[-1] != table.num_rows - 1):
        raise DecodeError(f"{len(lists)} series but {len(ends)} series ends in the values lists")
    counts = np.diff(ends, prepend=-1)
    ms = table.column("t").to_numpy() * 1000.0
    ts_ms = np.empty(len(ms), np.int64)
    np.rint(ms, out=ts_ms, casting="unsafe")  # exact: at most three decimals
    return counts, ts_ms, table.column("v").to_numpy()


def decode_matrix(body: bytes) -> Matrix:
    """A matrix response (``/api/v1/query`` of a range selector, ``/api/v1/query_range``)."""
    if not body.startswith(SUCCESS_MATRIX):
        return decode_matrix_json(body)
    located = _locate(body)
    if located is None:
        return decode_matrix_json(body)
    labels, spans, empty = located
    full = [span for span, is_empty in zip(spans, empty) if not is_empty]
    if not full:
        return Matrix([], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))
    counts, ts_ms, values = _parse_rows(full)
    kept = [lab for lab, is_empty in zip(labels, empty) if not is_empty]
    return Matrix(kept, counts.astype(np.int64), ts_ms, values)


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
