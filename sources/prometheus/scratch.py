"""Memory one read reuses: decoded chunks' arrays go back to it once merged, and later
chunks and the merged output take them again.

A fresh process first touches every page it writes, and each new page costs the kernel
time (zeroing it; on a virtual machine often more): for a day of 256 GPUs that was 0.5-1 s
of system time, more than the decoding itself. Arrow's memory pool (mimalloc) returns large
freed blocks to the OS, so a chunk's arrays, freed after its metric was merged, did not make
the next chunk's cheaper. :class:`Scratch` keeps them: buffers are sized in powers of two,
so one freed by a chunk fits the next chunk or a metric's merged output, and only the part
never written before costs new pages.

Buffers are private anonymous ``mmap`` s (Python's default for ``mmap(-1, n)`` is a shared
mapping, i.e. shmem, whose pages cost about 1.7x as much to first touch and to unmap: 0.76
against 0.42 ms per MB here), not Arrow's pool: the pool asks for transparent huge pages
(``MADV_HUGEPAGE``), whose first touch on the 2-vCPU VM of benchmarks/README.md cost anywhere
from 0.1 to 2.4 ms per MB from one process to the next (zeroing 2 MiB at once, compaction),
against a steady 0.4-0.6 ms per MB for ordinary 4 KiB pages. The kernel's own policy
(``/sys/kernel/mm/transparent_hugepage/enabled``) still decides for mappings not advised
either way.
"""

from __future__ import annotations

import mmap
import threading

import numpy as np

SMALLEST = 1 << 20  # bytes; smaller arrays are cheap to allocate anyway
PRIVATE = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS  # Python's default, MAP_SHARED, is shmem: dearer pages


class Scratch:
    """Buffers of one read: :meth:`take` an array, :meth:`give` it back when nothing reads it
    any more. Thread-safe. Arrays never given back (the read's output) stay valid; the
    buffers are freed when the Scratch and every array taken from it are gone."""

    def __init__(self) -> None:
        self._free: list[mmap.mmap] = []
        self._mine: dict[int, mmap.mmap] = {}  # every buffer taken, by id: give() accepts only these
        self._lock = threading.Lock()
        self.allocated = 0  # bytes of new buffers (for tests and measurements)
        self._largest_body = 0

    def held(self) -> int:
        """Bytes of the buffers taken and not given back (for tests and measurements)."""
        with self._lock:
            return sum(len(b) for b in self._mine.values()) - sum(len(b) for b in self._free)

    def body_guess(self) -> int:
        """Room to start a response body of unknown length with: a quarter more than the
        largest body read into this Scratch so far (at least 4 MiB)."""
        return max(4 << 20, self._largest_body + self._largest_body // 4)

    def saw_body(self, n_bytes: int) -> None:
        self._largest_body = max(self._largest_body, n_bytes)

    def take(self, n: int, dtype: type[np.generic]) -> np.ndarray:
        """An uninitialized array of ``n`` items: the smallest free buffer that holds it, else a new one."""
        size = n * np.dtype(dtype).itemsize
        with self._lock:
            fits = [b for b in self._free if len(b) >= size]
            if fits:
                buffer = min(fits, key=len)
                self._free.remove(buffer)
            else:
                buffer = mmap.mmap(-1, max(SMALLEST, 1 << max(size - 1, 0).bit_length()), flags=PRIVATE)
                self._mine[id(buffer)] = buffer
                self.allocated += len(buffer)
        return np.frombuffer(buffer, dtype, count=n)

    def give(self, *arrays: np.ndarray) -> None:
        """Return the buffers behind ``arrays`` (taken from this Scratch; others are ignored)
        for reuse: the caller must hold no other view of them."""
        with self._lock:
            for array in arrays:
                buffer = _buffer_of(array)
                if (
                    buffer is not None
                    and self._mine.get(id(buffer)) is buffer
                    and all(b is not buffer for b in self._free)
                ):
                    self._free.append(buffer)


class Held:
    """A response body read into a buffer of the read (``body.read_into``: the first ``n`` bytes
    of an mmap), read like ``bytes`` without copying it whole: ``len``, ``find`` and slices
    (``bytes`` copies of just that part), ``bytes()`` for all of it. Valid until the buffer is
    given back."""

    __slots__ = ("_buffer", "_n")

    def __init__(self, buffer: mmap.mmap, n: int) -> None:
        self._buffer, self._n = buffer, n

    def __len__(self) -> int:
        return self._n

    def __bytes__(self) -> bytes:
        return self._buffer[: self._n]

    def find(self, sub: bytes, start: int = 0) -> int:
        return self._buffer.find(sub, start, self._n)

    def __getitem__(self, part: slice) -> bytes:
        start, stop, step = part.indices(self._n)
        return self._buffer[start:stop:step]


def readable(body: bytes | np.ndarray) -> bytes | Held:
    """``body`` as ``bytes`` or, for a uint8 array from the start of a :class:`Scratch` buffer, a
    :class:`Held` over it (a copy would first touch as many fresh pages as the body has)."""
    if isinstance(body, bytes):
        return body
    buffer = _buffer_of(body)
    if (
        buffer is not None
        and body.ndim == 1
        and body.dtype == np.uint8
        and body.flags.c_contiguous
        and len(body)
        and body.ctypes.data == np.frombuffer(buffer, np.uint8, count=1).ctypes.data
    ):
        return Held(buffer, len(body))
    return body.tobytes()


def _buffer_of(array: np.ndarray) -> mmap.mmap | None:
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return base if isinstance(base, mmap.mmap) else None
