"""Counting a response's samples before decoding them, so that they can be decoded straight
into their place in the metric's output arrays (``place``).

:func:`scan_lists` finds each series' labels text and values list (the next series'
``{`` is the end of a list: ``{`` never occurs in one), counts the list's samples (its
``[``) on the way, and reads only its first and last timestamps: a range selector's answer
holds at most one sample before the request's window (at ``start - 1 ms`` on Prometheus 2.x)
and one at its end (``end``, which belongs to the next request), so those two decide how many of the list's samples
are in the window. The count is a claim, not a trust: ``jit_values.decode_lists`` checks
every list kept exactly that many samples, in increasing time order, and the response is
decoded another way when not.
"""

from __future__ import annotations

import numpy as np
from numba import int64, njit

from sources.prometheus.jit_values import BAD_LAYOUT, OK


@njit(cache=True, nogil=True, boundscheck=False)
def sample_ts(body, pos, end, shift_ms):  # pragma: no cover - compiled
    """``(microseconds less shift_ms, ok)`` of the sample ``[seconds,"value"]`` starting at ``pos``."""
    if pos >= end or body[pos] != 91:
        return int64(0), False
    pos += 1
    ms = int64(0)
    digits = 0
    while pos < end and 48 <= body[pos] <= 57:
        ms = ms * 10 + (body[pos] - 48)
        digits += 1
        pos += 1
    decimals = 0
    if pos < end and body[pos] == 46:
        pos += 1
        while pos < end and 48 <= body[pos] <= 57:
            ms = ms * 10 + (body[pos] - 48)
            decimals += 1
            pos += 1
    if digits == 0 or digits > 12 or decimals > 3 or pos >= end or body[pos] != 44:
        return int64(0), False
    for _ in range(decimals, 3):
        ms *= 10
    return (ms - shift_ms) * 1000, True


METRIC = np.frombuffer(b'{"metric":', np.uint8)
VALUES = np.frombuffer(b',"values":[', np.uint8)
BLOCK = 1024  # bytes searched at once for the next series' "{" (and counted for "[")


@njit(cache=True, nogil=True, inline="always")
def _starts_with(body, pos, word):  # pragma: no cover - compiled
    if pos + word.shape[0] > body.shape[0]:
        return False
    for i in range(word.shape[0]):
        if body[pos + i] != word[i]:
            return False
    return True


@njit(cache=True, nogil=True)
def _next_series(body, pos):  # pragma: no cover - compiled
    """``(position of the next "{" at or after pos or -1, "[" before it)``: a block at a time,
    both counted in one loop LLVM vectorizes over the slice (a loop over ``range(a, b)`` of
    the body is not vectorized: 6x slower)."""
    n = 0
    size = body.shape[0]
    while pos < size:
        block = body[pos : min(pos + BLOCK, size)]
        braces = 0
        brackets = 0
        for i in range(block.shape[0]):
            c = block[i]
            if c == 123:
                braces += 1
            if c == 91:
                brackets += 1
        if braces:
            for i in range(block.shape[0]):
                if block[i] == 123:
                    return pos + i, n
                if block[i] == 91:
                    n += 1
        n += brackets
        pos += block.shape[0]
    return -1, n


@njit(cache=True, nogil=True)
def scan_lists(body, pos, shift_ms, lo_us, hi_us, texts, starts, ends, counts):  # pragma: no cover - compiled
    """The compact matrix layout from ``pos`` (just after ``"result":[``): per series with
    samples, its ``"metric"`` text ``body[texts[i, 0]:texts[i, 1]]``, its values list
    ``body[starts[i]:ends[i]]`` and how many of its samples are in ``[lo_us, hi_us)``
    (:func:`count_in_window`). Returns ``(status, series, position after the last list's
    "]}")``: BAD_LAYOUT when the body is not in that layout (or has more series than
    ``counts`` has room for)."""
    n = 0
    size = body.shape[0]
    if pos + 1 < size and body[pos] == 93 and body[pos + 1] == 125:  # ]}: no series
        return OK, 0, pos
    while True:
        if not _starts_with(body, pos, METRIC):
            return BAD_LAYOUT, n, pos
        at = pos + METRIC.shape[0]
        while at < size and not (body[at] == 44 and _starts_with(body, at, VALUES)):
            at += 1
        if at >= size:
            return BAD_LAYOUT, n, pos
        first = at + VALUES.shape[0]  # just after the values list's "["
        after, samples = _next_series(body, first)
        if after >= 0:
            end = after - 3  # the values list's "]"
            if body[after - 2] != 125 or body[after - 1] != 44:  # },
                return BAD_LAYOUT, n, after
        else:
            end = first - 1
            while end + 1 < size and not (body[end] == 93 and body[end + 1] == 125):
                end += 1
            if end + 1 >= size:
                return BAD_LAYOUT, n, end
        if end < first or body[end] != 93 or body[end - 1] not in (91, 93):  # ]] or []
            return BAD_LAYOUT, n, end
        if end > first:
            if n >= counts.shape[0]:
                return BAD_LAYOUT, n, end
            kept = count_in_window(body, first, end, samples, shift_ms, lo_us, hi_us)
            if kept < 0:
                return BAD_LAYOUT, n, first
            texts[n, 0] = pos + METRIC.shape[0]
            texts[n, 1] = at
            starts[n] = first
            ends[n] = end
            counts[n] = kept
            n += 1
        if after < 0:
            return OK, n, end + 2
        pos = after


@njit(cache=True, nogil=True)
def count_in_window(body, a, b, samples, shift_ms, lo_us, hi_us):  # pragma: no cover - compiled
    """Of the ``samples`` samples of the list ``body[a:b]``, how many are in ``[lo_us,
    hi_us)``, from its first and last timestamps (module doc); -1 when one is not read."""
    first, ok = sample_ts(body, a, b, shift_ms)
    if not ok:
        return -1
    last_at = b - 1
    while last_at > a and body[last_at] != 91:
        last_at -= 1
    last, ok = sample_ts(body, last_at, b, shift_ms)
    if not ok:
        return -1
    if first < lo_us or first >= hi_us:
        samples -= 1
    if last_at != a and (last >= hi_us or last < lo_us):
        samples -= 1
    return samples
