"""Compiled pieces of the values-list kernel (``jit_values``): eight timestamp digits at
once from a 64-bit word, and the careful reading of a long decimal.

Why a value is exact: a short decimal (an optional ``-``, digits, at most one ``.``: what
Go's ``FormatFloat(v, 'f', -1, 64)`` writes for most values) whose digits, read as an
integer ``m``, are below 2**53, over ``10**decimals`` (at most 22) is exactly Python's
``float(text)``: both operands are exact in float64 and IEEE division is correctly rounded.
The kernel reads texts of up to 15 digits itself (``m < 10**15``); :func:`careful` those of
up to 18 significant digits with ``m <= 2**53``.

(These stay separate functions only where that costs nothing: the sample loop itself is
written out in one function, because numba's inlined helpers returning tuples made it 2-3x
slower.)
"""

from __future__ import annotations

import numpy as np
from numba import int64, njit, uint64

_POW10 = np.array([10.0**i for i in range(23)], np.float64)  # all exact in float64
_MS_SCALE = np.array([1000, 100, 10, 1], np.int64)  # by number of decimals of the seconds
MAX_EXACT = 2**53

# Eight ASCII digits at once (SWAR) in a little-endian uint64: a timestamp's first 8 digits.
_ZEROS = np.uint64(0x3030303030303030)
_HIGH = np.uint64(0xF0F0F0F0F0F0F0F0)
_SIX = np.uint64(0x0606060606060606)
_PAIRS = np.uint64(0x000000FF000000FF)
_C1 = np.uint64(100 + (1000000 << 32))
_C2 = np.uint64(1 + (10000 << 32))
_U8, _U16, _U32, _U64, _TEN = np.uint64(8), np.uint64(16), np.uint64(32), np.uint64(64), np.uint64(10)
_LOW32 = np.uint64(0xFFFFFFFF)


@njit(cache=True, nogil=True, inline="always")
def load8(words, pos):  # pragma: no cover - compiled
    """The 8 bytes at ``pos`` as a little-endian uint64, from two aligned words."""
    q = uint64(pos >> 3)  # unsigned: no negative-index wraparound code
    r = pos & 7
    if r == 0:
        return words[q]
    shift = uint64(r * 8)
    return (words[q] >> shift) | (words[q + uint64(1)] << (_U64 - shift))


@njit(cache=True, nogil=True, inline="always")
def eight_digits(word):  # pragma: no cover - compiled
    """The number 8 ASCII digits spell (first digit in the lowest byte), or -1 if one is not a digit."""
    if (word & _HIGH) != _ZEROS or ((word + _SIX) & _HIGH) != _ZEROS:
        return int64(-1)
    v = word - _ZEROS
    v = v * _TEN + (v >> _U8)
    v = (((v & _PAIRS) * _C1) + (((v >> _U16) & _PAIRS) * _C2)) >> _U32
    return int64(v & _LOW32)


@njit(cache=True, nogil=True, boundscheck=False)
def careful(body, text, quote):  # pragma: no cover - compiled
    """``(value, ok)`` of the short decimal ``body[text:quote]`` of up to 18 significant digits."""
    pos = text
    negative = body[pos] == 45
    if negative:
        pos += 1
    mantissa = int64(0)
    significant = 0
    decimals = 0
    digits = 0
    dot = False
    while pos < quote:
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
            return 0.0, False
        pos += 1
    if not digits or significant > 18 or mantissa > MAX_EXACT or decimals > 22:
        return 0.0, False
    value = mantissa / _POW10[decimals]
    return (-value if negative else value), True
