"""A matrix response's values lists -> int64 microseconds and float64 values, in one pass.

A numba-compiled loop reads each values list (``[1700000000.123,"0.5"],[...]``, outer
brackets excluded: the bounds :func:`decode._scan` found) byte by byte and writes straight
into preallocated arrays, with the GIL released (the fetch's worker threads decode in
parallel while other responses are in flight):

- timestamps: decimal seconds with at most three decimals (what Prometheus writes), turned
  into exact integer milliseconds, less the request's shift, times 1000 (the first eight
  digits read at once from a 64-bit word);
- values: a short decimal (an optional ``-``, digits, at most one ``.``: what Go's
  ``FormatFloat(v, 'f', -1, 64)`` writes for most values) whose digits, read as an integer
  ``m``, are at most 2**53 and which has at most 22 decimals is ``m / 10**decimals``: both
  operands are exact in float64 and IEEE division is correctly rounded, so the result is
  exactly Python's ``float(text)``. Anything else (``NaN``, ``+Inf``, ``-Inf``, long
  mantissas, exponents, tiny values) is left to :func:`finish_slow`: its position is
  recorded and Python's ``float`` parses it.

The kernel returns a status instead of raising: anything not in that layout (other
timestamp formats, whitespace, a damaged list) or too many slow values makes the caller use
its other decoder for the whole response, so the result never depends on this path.
Compiled code is cached on disk (``cache=True``): the first use on a machine compiles it
(about 0.9 CPU s), later processes load it (about 0.3 CPU s, on their first decode).
"""

from __future__ import annotations

import sys

import numpy as np
from numba import int64, njit, uint64

OK = 0
BAD_LAYOUT = 1  # not the layout this kernel reads: decode the response another way
TOO_MANY_SLOW = 2  # more values for float() than the slow buffer holds: decode another way

_POW10 = np.array([10.0 ** i for i in range(23)], np.float64)  # all exact in float64
_MS_SCALE = np.array([1000, 100, 10, 1], np.int64)  # by number of decimals of the seconds
MAX_EXACT = 2 ** 53
MIN_SAMPLE_BYTES = 8  # '[1,"1"]' and a separating ',': the fewest bytes a sample takes

# Eight ASCII digits at once (SWAR) in a little-endian uint64: a timestamp's first 8 digits.
_ZEROS = np.uint64(0x3030303030303030)
_HIGH = np.uint64(0xF0F0F0F0F0F0F0F0)
_SIX = np.uint64(0x0606060606060606)
_PAIRS = np.uint64(0x000000FF000000FF)
_C1 = np.uint64(100 + (1000000 << 32))
_C2 = np.uint64(1 + (10000 << 32))
_U8, _U16, _U32, _U64, _TEN = np.uint64(8), np.uint64(16), np.uint64(32), np.uint64(64), np.uint64(10)
_LOW32 = np.uint64(0xFFFFFFFF)


def max_samples(starts: np.ndarray, ends: np.ndarray) -> int:
    """An upper bound on the samples in the lists ``body[start:end]``."""
    return int((ends - starts + 1).sum()) // MIN_SAMPLE_BYTES


def words_of(body: bytes) -> np.ndarray:
    """``body`` as aligned little-endian uint64 words (no copy; the last partial word left
    out), or no words when the bytes are not 8-byte aligned or the machine is big-endian
    (then :func:`read_lists` reads byte by byte)."""
    words = np.frombuffer(body, np.uint64, count=len(body) // 8)
    return words if words.flags.aligned and sys.byteorder == "little" else np.zeros(0, np.uint64)


@njit(cache=True, nogil=True, inline="always")
def _load8(words, pos):  # pragma: no cover - compiled
    """The 8 bytes at ``pos`` as a little-endian uint64, from two aligned words."""
    q = pos >> 3
    r = pos & 7
    if r == 0:
        return words[q]
    shift = uint64(r * 8)
    return (words[q] >> shift) | (words[q + 1] << (_U64 - shift))


@njit(cache=True, nogil=True, inline="always")
def _eight_digits(word):  # pragma: no cover - compiled
    """The number 8 ASCII digits spell (first digit in the lowest byte), or -1 if one is not a digit."""
    if (word & _HIGH) != _ZEROS or ((word + _SIX) & _HIGH) != _ZEROS:
        return int64(-1)
    v = word - _ZEROS
    v = v * _TEN + (v >> _U8)
    v = (((v & _PAIRS) * _C1) + (((v >> _U16) & _PAIRS) * _C2)) >> _U32
    return int64(v & _LOW32)


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def read_lists(body, words, starts, ends, shift_ms, ts_us, values, counts, slow):  # pragma: no cover - compiled
    """Decode the lists ``body[starts[i]:ends[i]]`` into ``ts_us``/``values`` (series after
    series; ``counts[i]`` samples each); ``words`` is :func:`words_of` the body. Each list is
    followed by its closing ``]`` (``body[ends[i]]``), else BAD_LAYOUT. A value left to
    Python gets NaN in ``values`` and a row ``(sample index, text start, text end)`` in
    ``slow``. Returns ``(status, samples, slow rows, byte position of a layout error)``."""
    pow10 = _POW10
    scale = _MS_SCALE
    n_words = words.shape[0]
    n = 0
    n_slow = 0
    for s in range(starts.shape[0]):
        pos = starts[s]
        end = ends[s]
        first = n
        if end >= body.shape[0] or body[end] != 93:  # every list ends with its ']': no loop reads past it
            return BAD_LAYOUT, n, n_slow, end
        while pos < end:
            if body[pos] != 91:  # [
                return BAD_LAYOUT, n, n_slow, pos
            pos += 1
            ms = 0
            digits = 0
            if pos + 8 < end and (pos >> 3) + 1 < n_words:
                first8 = _eight_digits(_load8(words, pos))
                if first8 >= 0:
                    ms = first8
                    digits = 8
                    pos += 8
            while 48 <= body[pos] <= 57:  # stops at the list's closing ']' at the latest
                ms = ms * 10 + (body[pos] - 48)
                digits += 1
                pos += 1
            if digits == 0 or digits > 12:
                return BAD_LAYOUT, n, n_slow, pos
            decimals = 0
            if pos < end and body[pos] == 46:  # .
                pos += 1
                while 48 <= body[pos] <= 57:
                    ms = ms * 10 + (body[pos] - 48)
                    decimals += 1
                    pos += 1
                if decimals == 0 or decimals > 3:
                    return BAD_LAYOUT, n, n_slow, pos
            if pos + 2 >= end or body[pos] != 44 or body[pos + 1] != 34:  # ,"
                return BAD_LAYOUT, n, n_slow, pos
            ts_us[n] = (ms * scale[decimals] - shift_ms) * 1000
            pos += 2
            text = pos
            negative = False
            if body[pos] == 45:  # -
                negative = True
                pos += 1
            mantissa = 0
            significant = 0
            decimals = 0
            digits = 0
            dot = False
            while True:  # stops at the list's closing ']' at the latest
                c = body[pos]
                if 48 <= c <= 57:
                    digits += 1
                    if significant or c != 48:
                        significant += 1
                        if significant <= 18:
                            mantissa = mantissa * 10 + (c - 48)
                    if dot:
                        decimals += 1
                elif c == 46 and not dot:
                    dot = True
                else:
                    break
                pos += 1
            if pos < end and body[pos] == 34 and digits and significant <= 18 and mantissa <= MAX_EXACT \
                    and decimals <= 22:
                value = mantissa / pow10[decimals]
                values[n] = -value if negative else value
            else:
                while pos < end and body[pos] != 34:  # the text's closing quote
                    pos += 1
                if pos >= end or n_slow >= slow.shape[0]:
                    return (BAD_LAYOUT if pos >= end else TOO_MANY_SLOW), n, n_slow, pos
                slow[n_slow, 0] = n
                slow[n_slow, 1] = text
                slow[n_slow, 2] = pos
                n_slow += 1
                values[n] = np.nan
            pos += 1  # past the closing quote
            if pos >= end or body[pos] != 93:  # ]
                return BAD_LAYOUT, n, n_slow, pos
            pos += 1
            n += 1
            if pos < end:
                if body[pos] != 44 or pos + 1 >= end:  # , before the next sample
                    return BAD_LAYOUT, n, n_slow, pos
                pos += 1
        counts[s] = n - first
    return OK, n, n_slow, 0


@njit(cache=True, nogil=True, boundscheck=False)
def window_spans(ts_us, counts, start_us, end_us, offsets, lengths):  # pragma: no cover - compiled
    """Per series (``counts[i]`` samples each, series after series): ``offsets[i]`` and
    ``lengths[i]`` of its samples with ``start_us <= ts < end_us``. False (and the spans
    unset) when a series' timestamps do not increase: then the samples outside the window
    are not a prefix and a suffix of it."""
    first = 0
    for s in range(counts.shape[0]):
        last = first + counts[s]
        for i in range(first + 1, last):
            if ts_us[i] <= ts_us[i - 1]:
                return False
        lo = first
        while lo < last and ts_us[lo] < start_us:
            lo += 1
        hi = last
        while hi > lo and ts_us[hi - 1] >= end_us:
            hi -= 1
        offsets[s] = lo
        lengths[s] = hi - lo
        first = last
    return True


SLOW_CHARACTERS = frozenset(b"0123456789.+-eEINafn")  # digits, exponents, NaN, +Inf, -Inf


def finish_slow(body: bytes, slow: np.ndarray, values: np.ndarray) -> bool:
    """Parse the values :func:`read_lists` left to Python (``slow`` rows: sample, text start,
    text end) with ``float``; False when one is not a number as Prometheus writes it (no
    whitespace, underscores or other spellings ``float`` would accept)."""
    for i, a, b in slow.tolist():
        text = body[a:b]
        if not text or not SLOW_CHARACTERS.issuperset(text):
            return False
        try:
            values[i] = float(text)
        except ValueError:
            return False
    return True
