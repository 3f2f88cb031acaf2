"""Values lists -> columns through pyarrow's compute kernels: the default decoder, and the
fallback of the compiled one (``cardhours[fast]``, ``jit_values``) for what it does not read
(timestamps with more than three decimals, more values than it leaves to Python's ``float``).

Each list, without its outer brackets, loses its brackets and quotes in one ``bytes.translate``
while it is in the CPU cache, and is written into one buffer (:data:`POOL`)::

    [1700000000,"0.5"],[1700000015.123,"NaN"]   ->   1700000000,0.5,1700000015.123,NaN

Then the commas are found (numpy) and each becomes a ``+``, so that every number is one
string of an Arrow array without copying it (``+0.5`` reads as ``0.5``), and a cast parses
them all into float64 (GIL released, no Python object per sample): ``NaN``, ``+Inf``, ``-Inf``
and exponents, correctly rounded, exactly Python's ``float`` of the text. A number with a sign
of its own (``-1``, ``+Inf``) does not read after a ``+``; then the lists are split at the
commas instead (``split_pattern``, which copies each number: slower, same result). Every
sample must be ``[t,"v"]``: per list, 2 numbers, 2 brackets and 2 quotes per ``[``; anything
else, or text that is not a number, goes to the reference decoder. Timestamps are decimal
seconds with at most three decimals, so ``rint(seconds * 1000)`` is the exact millisecond.
``benchmarks/prom_decode.py`` measures this against the other decoders (among them pyarrow's
CSV reader, which this replaced).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sources.prometheus.scratch import Held, Scratch

Bounds = list[tuple[int, int]]  # (start, end) of each series' values list in the body, outer brackets excluded
DROP = b'[]"'  # a sample's brackets and quotes: 4 characters of each "[t,"v"]"
COMMA, PLUS = ord(","), ord("+")
# The C library's allocator, not Arrow's default (mimalloc): this decoder's large, short-lived
# buffers (the lists' text, the numbers) come and go once per answer, and mimalloc hands freed
# memory back to the OS and takes it again as fresh (transparent huge) pages, each zeroed on
# first touch; malloc keeps reusing the same pages (benchmarks/README.md: 0.1-0.2 CPU s a day
# of 256 GPUs).
POOL = pa.system_memory_pool()


def pooled(n: int, dtype: type[np.generic]) -> np.ndarray:
    """An uninitialized array from :data:`POOL`, which keeps memory it got from the OS for
    reuse: the large per-response arrays of a read reuse each other's pages instead of each
    touching fresh ones (first-touch page faults are a large part of the reader's CPU on
    virtual machines)."""
    return np.frombuffer(pa.allocate_buffer(n * np.dtype(dtype).itemsize, memory_pool=POOL), dtype)


def micros(seconds: np.ndarray, shift_ms: int = 0, scratch: Scratch | None = None) -> np.ndarray:
    """Decimal seconds (at most three decimals) -> exact int64 microseconds, less ``shift_ms``
    (in memory from ``scratch`` when given, else :data:`POOL`)."""
    us = pooled(len(seconds), np.int64) if scratch is None else scratch.take(len(seconds), np.int64)
    ms = us.view(np.float64)  # the milliseconds in the same memory, then each turned into its microseconds
    np.multiply(seconds, 1000.0, out=ms)
    np.rint(ms, out=ms)
    if shift_ms:
        ms -= shift_ms
    np.multiply(ms, 1000.0, out=us, casting="unsafe")  # whole milliseconds below 2**53 / 1000: exact
    return us


def number_lists(body: bytes | Held, bounds: Bounds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The values lists ``body[start:end]`` without brackets and quotes (``t,v,t,v``), written
    list by list into one buffer from :data:`POOL` (unlike a new ``bytes`` of the whole text,
    fresh pages zeroed on first touch each time, the pool's memory is reused from one answer to
    the next), each translated on its own while it is in the CPU cache: (the text as a
    writable uint8 array, where each list starts in it, each list's ``[`` count)."""
    buffer = pa.allocate_buffer(sum(b - a for a, b in bounds), memory_pool=POOL)
    out = memoryview(buffer).cast("B")
    starts, samples = [], []
    pos = 0
    for a, b in bounds:
        starts.append(pos)
        raw = body[a:b]
        samples.append(raw.count(b"["))
        text = raw.translate(None, DROP)
        out[pos : pos + len(text)] = text
        pos += len(text)
    return np.frombuffer(buffer, np.uint8, count=pos), np.array(starts, np.int64), np.array(samples, np.int64)


def parse_values(body: bytes | Held, bounds: Bounds) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(samples per list, timestamps in seconds, values) of the values lists ``body[start:end]``
    (none empty); None when a list is not ``[t,"v"]`` samples of numbers pyarrow reads (the
    caller then decodes the answer the reference way). Timestamps and values are strided views
    of one array of the numbers (whoever keeps them copies them anyway).

    The numbers are cut at the commas without copying them: each comma becomes ``+``, the
    first character of the number after it (``+v`` reads as ``v``). A number that starts with
    a sign itself (``-1``, ``+Inf``) does not read that way; then the text is split at the
    commas instead (``split_pattern``: a copy of each number, slower)."""
    text, starts, samples = number_lists(body, bounds)
    commas = np.flatnonzero(text == COMMA)
    first = np.searchsorted(commas, starts)  # each list's first comma
    numbers = np.diff(first, append=len(commas)) + 1
    removed = np.array([b - a for a, b in bounds], np.int64) - np.diff(starts, append=len(text))
    if not (np.array_equal(numbers, 2 * samples) and np.array_equal(removed, 4 * samples)):
        return None  # not 2 numbers, 2 brackets and 2 quotes per sample
    text[commas] = PLUS
    try:
        parsed = _floats(_strings(np.insert(commas, first, starts), text))
    except pa.ArrowInvalid:  # a signed number, or one that is empty or not a number
        text[commas] = COMMA
        try:
            parsed = _floats(pc.split_pattern(_strings(starts, text), ",", memory_pool=POOL).flatten())
        except pa.ArrowInvalid:
            return None
    return samples, parsed[0::2], parsed[1::2]


def _strings(starts: np.ndarray, text: np.ndarray) -> pa.LargeStringArray:
    """The strings of ``text`` that begin at ``starts`` (each runs to the next)."""
    offsets = np.append(starts, len(text))
    return pa.Array.from_buffers(pa.large_string(), len(starts), [None, pa.py_buffer(offsets), pa.py_buffer(text)])


def _floats(numbers: pa.Array) -> np.ndarray:
    return pc.cast(numbers, pa.float64(), memory_pool=POOL).to_numpy()
