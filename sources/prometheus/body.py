"""Reading a response body straight into a reusable buffer.

A read of one day of 256 GPUs receives about 350 MB of JSON. Read the usual way, each body
is a new ``bytes`` object; while a metric's bodies wait for its last one (placed decoding,
``place``) the allocator cannot hand the same pages round again, and the kernel's first
touch of new pages (0.35 ms per MB on the 2-vCPU VM of benchmarks/README.md) cost about
0.1 CPU s per read. :func:`read_into` reads the body with ``http.client``'s ``readinto``
(chunked transfer decoded in place, no copy) into a buffer from the read's
:class:`scratch.Scratch`; once decoded, the buffer goes back to it and later bodies and the
read's output arrays reuse its pages.

Only an uncompressed body is read this way; anything else (a ``Content-Encoding``, a
response object without the expected ``http.client`` underneath) is read as usual. A body
cut short (a broken chunked transfer, fewer bytes than ``Content-Length``) or a socket error
raises urllib3's ``ProtocolError``, as urllib3's own read would, so the client retries it.
"""

from __future__ import annotations

import http.client
from collections.abc import Callable

import numpy as np
import requests
import urllib3

FIRST_GUESS = 4 << 20  # bytes; a buffer doubles (one copy) when a body outgrows it

Take = Callable[[int, type[np.generic]], np.ndarray]
Give = Callable[..., None]


def read_into(response: requests.Response, take: Take, give: Give, guess: int = FIRST_GUESS) -> np.ndarray | bytes:
    """The whole body of ``response`` as a uint8 array over a buffer from ``take`` (the caller
    gives it back when done), or as ``bytes`` when it cannot be read that way. Without a
    ``Content-Length`` the buffer starts at ``guess`` bytes (the caller's best: a body that
    outgrows it costs a copy)."""
    raw = response.raw
    fp = getattr(raw, "_fp", None)
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity") or not hasattr(fp, "readinto"):
        return raw.read(decode_content=True)
    length = response.headers.get("Content-Length")
    size = int(length) if length and length.isdigit() else guess
    buffer = take(size + 1, np.uint8)  # one byte more: a full buffer means the body may go on
    n = 0
    try:
        while True:
            if n == len(buffer):
                bigger = take(2 * len(buffer), np.uint8)
                bigger[:n] = buffer
                give(buffer)
                buffer = bigger
            got = fp.readinto(memoryview(buffer)[n:])
            if not got:
                break
            n += got
    except (http.client.HTTPException, OSError) as exc:  # what urllib3 wraps when it reads: retried
        give(buffer)
        raise urllib3.exceptions.ProtocolError(f"reading the response body failed: {exc!r}", exc) from exc
    except BaseException:
        give(buffer)
        raise
    if length and length.isdigit() and n != int(length):  # http.client ends a short body silently
        give(buffer)
        raise urllib3.exceptions.ProtocolError(f"response body ended after {n} of {length} bytes")
    return buffer[:n]
