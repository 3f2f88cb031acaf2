"""Python's cyclic garbage collector paused while a read builds its many small objects.

A read of one day of 256 GPUs parses some 22,000 label sets (the census and the answers'
series) into dicts and tuples; each few hundred new containers trigger a collection, and the
full ones walk every object of the process. Measured in a fresh process
(benchmarks/README.md): 0.07 CPU s of a 0.75 s read, 8.5 % of its CPU. A read creates no
reference cycles it needs collected, so the collector is paused for its duration (and
resumes, if it was running, when the last overlapping read in the process ends).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pauses = 0
_resume = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable ``gc`` inside the block; nested and concurrent blocks resume it once, after the last."""
    global _pauses, _resume
    with _lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()
