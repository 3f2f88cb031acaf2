"""Values lists -> columns through pyarrow's CSV reader: the decoder for what the numba
kernel (``jit_values``) does not read (timestamps with more than three decimals, more
values than it leaves to Python's ``float``), and before it the only one.

Each list, without its outer brackets, is rewritten by one ``bytes.translate`` (``[`` ->
newline, ``]`` and quotes dropped) while it is in the CPU cache and written, followed by
``,1``, into one buffer from Arrow's memory pool::

    1700000000,0.5,
    1700000015.123,NaN,1       <- "1" marks the last row of a series

which pyarrow's CSV reader parses (GIL released) into float64 columns; it reads ``NaN``,
``+Inf``, ``-Inf`` and exponents, correctly rounded. Timestamps are decimal seconds with
at most three decimals, so ``rint(seconds * 1000)`` is the exact millisecond.
``benchmarks/prom_decode.py`` measures this against alternatives.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from cardhours.sources.prometheus.errors import DecodeError

Bounds = list[tuple[int, int]]  # (start, end) of each series' values list in the body, outer brackets excluded
SERIES_END = b",1"  # joins values lists: marks the last CSV row of each series
TO_CSV = bytes.maketrans(b"[", b"\n")
TO_CSV_DROP = b'"]'
_READ = pacsv.ReadOptions(column_names=["t", "v", "last"], block_size=1 << 22)
_PARSE = pacsv.ParseOptions(quote_char=False)
_CONVERT = pacsv.ConvertOptions(
    column_types={"t": pa.float64(), "v": pa.float64(), "last": pa.int8()}, null_values=[""]
)


def pooled(n: int, dtype: type[np.generic]) -> np.ndarray:
    """An uninitialized array from Arrow's memory pool, which keeps memory it got from the
    OS for reuse: the large per-response and merged arrays of a read reuse each other's
    pages instead of each touching fresh ones (first-touch page faults are a large part of
    the reader's CPU on virtual machines)."""
    return np.frombuffer(pa.allocate_buffer(n * np.dtype(dtype).itemsize), dtype)


def micros(seconds: np.ndarray, shift_ms: int = 0) -> np.ndarray:
    """Decimal seconds (at most three decimals) -> exact int64 microseconds, less ``shift_ms``."""
    ms = np.multiply(seconds, 1000.0, out=pooled(len(seconds), np.float64))
    np.rint(ms, out=ms)
    us = pooled(len(seconds), np.int64)
    np.copyto(us, ms, casting="unsafe")  # integral floats: exact
    del ms
    if shift_ms:
        us -= shift_ms
    us *= 1000
    return us


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


def parse_values_csv(body: bytes, bounds: Bounds, threads: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(samples per list, timestamps in seconds, values) of the values lists ``body[start:end]``
    (none empty), through pyarrow's CSV reader (any float spelling it reads).

    Single-threaded (the default), the text is parsed as one block, so both float64 columns
    come out of Arrow without a copy; the fetch runs several of these at once. ``threads``
    lets pyarrow cut the text into 4 MiB blocks parsed on its own thread pool."""
    text = csv_rows(body, bounds)
    read = (
        _READ
        if threads
        else pacsv.ReadOptions(column_names=_READ.column_names, use_threads=False, block_size=text.size + 1)
    )
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
