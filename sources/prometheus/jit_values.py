"""A scanned answer's values lists decoded straight into their place in the metric's output
arrays (``place``): int64 microseconds and float64 values, in one pass (``cardhours[fast]``).

A numba-compiled loop reads each values list (``[1700000000.123,"0.5"],[...]``, outer
brackets excluded: the bounds ``jit_place.scan_lists`` found) and writes straight into the
output, with the GIL released (answers are decoded in parallel while others are in flight).
Timestamps are exact; a value is exactly Python's ``float(text)`` or left to
:func:`finish_slow`, which hands ``NaN``, ``+Inf``, ``-Inf``, exponents and long mantissas to
``float`` (``jit_sample`` says why the rest is exact).

The kernel returns a status instead of raising: anything not in that layout (other
timestamp formats, whitespace, a damaged list), too many slow values, or a list that does not
keep exactly its counted samples in increasing time order makes the caller decode the
metric the default way (``csv_values``), so the result never depends on this path.
Compiled code is cached on disk (``cache=True``): the first use on a machine compiles it
(about 0.9 CPU s), later processes load it (about 0.3 CPU s, on their first decode).
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit
from numba import uint64 as u  # unsigned indices: no negative-index wraparound code (see decode_lists)

from sources.prometheus.jit_sample import _MS_SCALE, _POW10, careful, eight_digits, load8

OK = 0
BAD_LAYOUT = 1  # not the layout this kernel reads: decode the response another way
TOO_MANY_SLOW = 2  # more values for float() than the slow buffer holds: decode another way
OUT_OF_ORDER = 3  # a list's timestamps do not increase
COUNT_MISMATCH = 4  # a list kept another number of samples than its counted ones
LOWEST = np.iinfo(np.int64).min


def words_of(body: bytes) -> np.ndarray:
    """``body`` as aligned little-endian uint64 words (no copy; the last partial word left
    out), or no words when the bytes are not 8-byte aligned or the machine is big-endian
    (then the kernels read byte by byte)."""
    words = np.frombuffer(body, np.uint64, count=len(body) // 8)
    return words if words.flags.aligned and sys.byteorder == "little" else np.zeros(0, np.uint64)


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def decode_lists(
    body, words, starts, ends, shift_ms, lo_us, hi_us, dest, expected, rank, ts_us, values, series, slow
):  # pragma: no cover - compiled
    """Decode the lists ``body[starts[i]:ends[i]]`` (``words``: :func:`words_of` the body),
    keeping samples with ``lo_us <= ts < hi_us``: list ``i``'s samples go to ``dest[i]``
    onwards with ``series`` set to ``rank[i]``; each list's timestamps must increase (else
    OUT_OF_ORDER) and exactly ``expected[i]`` must be kept (else COUNT_MISMATCH). Each list
    is followed by its closing ``]`` (``body[ends[i]]``), else BAD_LAYOUT. A value left to
    Python gets NaN and a row ``(sample position, text start, text end)`` in ``slow``. Returns
    ``(status, samples, slow rows, byte position of an error)``.

    Arrays are indexed with unsigned integers (``u(pos)``): numba then leaves out the code
    that maps a negative index to the end of the array, which cost 31 % of this loop
    (0.233 -> 0.161 s over a day of 256 GPUs); no index here is ever negative."""
    pow10 = _POW10
    scale = _MS_SCALE
    n_words = words.shape[0]
    n = 0
    n_slow = 0
    for s in range(starts.shape[0]):
        pos = starts[s]
        end = ends[s]
        at = dest[s]
        stop = at + expected[s]
        prev = LOWEST
        if end >= body.shape[0] or body[u(end)] != 93:  # every list ends with its ']': no loop reads past it
            return BAD_LAYOUT, n, n_slow, end
        while pos < end:
            if body[u(pos)] != 91:  # [
                return BAD_LAYOUT, n, n_slow, pos
            pos += 1
            ms = 0
            digits = 0
            if pos + 8 < end and (pos >> 3) + 1 < n_words:
                first8 = eight_digits(load8(words, pos))
                if first8 >= 0:
                    ms = first8
                    digits = 8
                    pos += 8
            c = body[u(pos)]
            while 48 <= c <= 57:  # stops at the list's closing ']' at the latest
                ms = ms * 10 + (c - 48)
                digits += 1
                pos += 1
                c = body[u(pos)]
            if digits == 0 or digits > 12:
                return BAD_LAYOUT, n, n_slow, pos
            decimals = 0
            if c == 46:  # .
                pos += 1
                c = body[u(pos)]
                while 48 <= c <= 57:
                    ms = ms * 10 + (c - 48)
                    decimals += 1
                    pos += 1
                    c = body[u(pos)]
                if decimals == 0 or decimals > 3:
                    return BAD_LAYOUT, n, n_slow, pos
            if pos + 2 >= end or c != 44 or body[u(pos + 1)] != 34:  # ,"
                return BAD_LAYOUT, n, n_slow, pos
            ts = (ms * scale[u(decimals)] - shift_ms) * 1000
            pos += 2
            text = pos
            c = body[u(pos)]
            negative = c == 45  # -
            if negative:
                pos += 1
                c = body[u(pos)]
            mantissa = 0
            digits = 0
            while 48 <= c <= 57:
                mantissa = mantissa * 10 + (c - 48)
                digits += 1
                pos += 1
                c = body[u(pos)]
            decimals = 0
            if c == 46:
                pos += 1
                c = body[u(pos)]
                while 48 <= c <= 57:
                    mantissa = mantissa * 10 + (c - 48)
                    decimals += 1
                    pos += 1
                    c = body[u(pos)]
            read = c == 34 and pos < end and digits > 0 and digits + decimals <= 15
            if read:
                value = mantissa / pow10[u(decimals)]
                if negative:
                    value = -value
            else:
                while pos < end and body[u(pos)] != 34:  # the text's closing quote
                    pos += 1
                if pos >= end:
                    return BAD_LAYOUT, n, n_slow, pos
                value, read = careful(body, text, pos)
            if ts <= prev:
                return OUT_OF_ORDER, n, n_slow, text
            prev = ts
            if lo_us <= ts < hi_us:
                if at >= stop:
                    return COUNT_MISMATCH, n, n_slow, text
                ts_us[u(at)] = ts
                series[u(at)] = rank[s]
                if read:
                    values[u(at)] = value
                else:
                    if n_slow >= slow.shape[0]:
                        return TOO_MANY_SLOW, n, n_slow, pos
                    slow[n_slow, 0] = at
                    slow[n_slow, 1] = text
                    slow[n_slow, 2] = pos
                    n_slow += 1
                    values[u(at)] = np.nan
                at += 1
                n += 1
            pos += 1  # past the closing quote
            if pos >= end or body[u(pos)] != 93:  # ]
                return BAD_LAYOUT, n, n_slow, pos
            pos += 1
            if pos < end:
                if body[u(pos)] != 44 or pos + 1 >= end:  # , before the next sample
                    return BAD_LAYOUT, n, n_slow, pos
                pos += 1
        if at != stop:
            return COUNT_MISMATCH, n, n_slow, end
    return OK, n, n_slow, 0


SLOW_CHARACTERS = frozenset(b"0123456789.+-eEINafn")  # digits, exponents, NaN, +Inf, -Inf


def finish_slow(body: bytes | np.ndarray, slow: np.ndarray, values: np.ndarray) -> bool:
    """Parse the values :func:`decode_lists` left to Python (``slow`` rows: sample, text start,
    text end) with ``float``; False when one is not a number as Prometheus writes it (no
    whitespace, underscores or other spellings ``float`` would accept)."""
    for i, a, b in slow.tolist():
        text = bytes(body[a:b])
        if not text or not SLOW_CHARACTERS.issuperset(text):
            return False
        try:
            values[i] = float(text)
        except ValueError:
            return False
    return True
