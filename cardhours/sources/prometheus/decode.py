"""Prometheus API response bytes -> columns, without a Python object per sample.

A matrix response, as Prometheus (and Thanos, Mimir: the same encoder) writes it::

    {"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{"__name__":"m","gpu":"0"},"values":[[1700000000,"0.5"],[1700000015.123,"NaN"]]},...]}}

Fast path: each series' small ``"metric"`` object is kept as its JSON text (the fetch
parses each distinct text once per read); its ``"values"`` list is located by byte search
(``{`` never occurs inside a values list, so the next series is one ``memchr`` away). Each
list, without its outer brackets, is rewritten by one ``bytes.translate`` (``[`` ->
newline, ``]`` and quotes dropped) while it is in the CPU cache and written, followed by
``,1``, into one buffer from Arrow's memory pool::

    1700000000,0.5,
    1700000015.123,NaN,1       <- "1" marks the last row of a series

which pyarrow's CSV reader parses (GIL released) into float64 columns; it reads ``NaN``,
``+Inf``, ``-Inf`` and exponents, correctly rounded. Timestamps are decimal seconds with
at most three decimals, so ``rint(seconds * 1000)`` is the exact millisecond.
``benchmarks/prom_decode.py`` measures this against alternatives.

Anything not in that exact compact layout (whitespace, other key order, native
histograms) goes to :func:`decode_matrix_json`, a plain ``json.loads`` decoder that gives
the same result or a clear error, so the fast path never guesses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
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


Bounds = list[tuple[int, int]]  # (start, end) of each series' values list in the body, outer brackets excluded


def _scan(body: bytes) -> tuple[list[bytes], Bounds] | None:
    """Each series' ``"metric"`` object (unparsed JSON text) and where its values list is
    (``body[start:end]`` is ``[t,"v"],...,[t,"v"]``; empty when ``start == end``), or None
    when the layout is not the compact one."""
    texts: list[bytes] = []
    bounds: Bounds = []
    pos = len(SUCCESS_MATRIX)
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
        if after >= 0 and body[after - 2:after] != b"},":
            return None
        if end < 0 or body[end - 1:end + 1] not in (b"]]", b"[]"):
            return None
        texts.append(body[pos + len(METRIC):at])
        bounds.append((first + 1, end))
        if after < 0:
            tail = body[end + 2:]
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


def csv_text(lists: list[memoryview]) -> bytes:
    """Values lists (``[t,"v"],[t,"v"]``, outer brackets removed) as ``t,v,`` rows, the last
    row of each list ending in ``1``; the text starts with an empty line (pyarrow skips it).
    The same text as :func:`csv_rows`, as a new ``bytes`` (two passes: join, translate)."""
    return SERIES_END.join([*lists, b""]).translate(TO_CSV, TO_CSV_DROP)


def csv_rows(body: bytes, bounds: Bounds) -> pa.Buffer:
    """The values lists ``body[start:end]`` (none empty) as the CSV rows of :func:`csv_text`,
    written list by list into one buffer from Arrow's memory pool: unlike a new ``bytes`` of
    the whole text (fresh pages from the OS, zeroed on first touch, each time), the pool's
    memory is reused from one response to the next. Each list is translated on its own,
    while it is in the CPU cache."""
    buffer = pa.allocate_buffer(sum(b - a for a, b in bounds) + len(SERIES_END) * len(bounds))
    out = memoryview(buffer).cast("B")
    pos = 0
    for a, b in bounds:
        rows = body[a:b].translate(TO_CSV, TO_CSV_DROP)
        end = pos + len(rows)
        out[pos:end] = rows
        pos = end + len(SERIES_END)
        out[end:pos] = SERIES_END
    return buffer.slice(0, pos)


def parse_values(body: bytes, bounds: Bounds, threads: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(samples per list, timestamps in seconds, values) of the values lists ``body[start:end]``
    (none empty).

    Single-threaded (the default), the text is parsed as one block, so both float64 columns
    come out of Arrow without a copy; the fetch runs several of these at once. ``threads``
    lets pyarrow cut the text into 4 MiB blocks parsed on its own thread pool."""
    text = csv_rows(body, bounds)
    read = _READ if threads else pacsv.ReadOptions(column_names=_READ.column_names, use_threads=False,
                                                   block_size=text.size + 1)
    table = pacsv.read_csv(pa.BufferReader(text), read_options=read, parse_options=_PARSE, convert_options=_CONVERT)
    del text
    if table.column("t").null_count or table.column("v").null_count:
        raise DecodeError("a sample without a timestamp or value in the values lists")
    ends = pc.indices_nonzero(pc.is_valid(table.column("last"))).to_numpy().astype(np.int64)
    if len(ends) != len(bounds) or (len(ends) and ends[-1] != table.num_rows - 1):
        raise DecodeError(f"{len(bounds)} series but {len(ends)} series ends in the values lists")
    return np.diff(ends, prepend=-1), _column(table, "t"), _column(table, "v")


def _column(table: pa.Table, name: str) -> np.ndarray:
    column = table.column(name)
    return (column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()).to_numpy()


def to_ms(seconds: np.ndarray) -> np.ndarray:
    """Decimal seconds with at most three decimals -> exact int64 milliseconds."""
    ms = np.multiply(seconds, 1000.0)
    return np.rint(ms, out=ms).astype(np.int64)


@dataclass(frozen=True)
class Columns:
    """The fast path's result before labels are parsed: series ``i`` (its ``"metric"`` JSON
    text) owns the next ``counts[i]`` samples; series without samples are left out."""

    texts: list[bytes]
    counts: np.ndarray  # int64 per series
    seconds: np.ndarray  # float64 timestamps as sent: decimal seconds, at most three decimals
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
    return Matrix(labels, columns.counts, to_ms(columns.seconds), columns.values)


def decode_columns(body: bytes) -> Columns | Matrix:
    """:class:`Columns` of a matrix response in the compact layout, else the
    :func:`decode_matrix_json` result (or its DecodeError)."""
    if not body.startswith(SUCCESS_MATRIX):
        return decode_matrix_json(body)
    scanned = _scan(body)
    if scanned is None:
        return decode_matrix_json(body)
    texts, bounds = scanned
    full = [(a, b) for a, b in bounds if a < b]
    if not full:
        return Columns([], np.zeros(0, np.int64), np.zeros(0, np.float64), np.zeros(0, np.float64))
    if len(full) < len(texts):
        texts = [text for text, (a, b) in zip(texts, bounds) if a < b]
    return Columns(texts, *parse_values(body, full))


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
