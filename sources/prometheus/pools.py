"""The threads of one Prometheus read (``fetch.fetch_all``)."""

from __future__ import annotations

import os
import queue
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class Pools:
    """The read's threads: ``fetch`` (one per parallel request), ``decode`` (one thread: two
    decoding next to the server's threads on the 2-vCPU reference machine made the server
    itself slower, benchmarks/README.md) and ``last`` (one per CPU, at most 4: the last
    metric's answers, decoded when nothing else is in flight). ``finished`` receives each
    submitted future once it is done (cheaper than ``concurrent.futures.wait`` on all of them)."""

    def __init__(self, max_parallel: int) -> None:
        self.fetch = ThreadPoolExecutor(max_workers=max(max_parallel, 1), thread_name_prefix="prometheus")
        self.decode = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prometheus-decode")
        self.last = ThreadPoolExecutor(max_workers=min(os.cpu_count() or 1, 4), thread_name_prefix="prometheus-last")
        self.finished: queue.SimpleQueue[Future] = queue.SimpleQueue()

    def submit(self, executor: ThreadPoolExecutor, *call: Any) -> Future:
        future = executor.submit(*call)
        future.add_done_callback(self.finished.put)
        return future

    def shutdown(self, busy: bool) -> None:
        """Idle threads end on their own; after a failure, queued requests are dropped and the
        decode jobs (they write into this read's arrays) are let finish."""
        self.fetch.shutdown(wait=False, cancel_futures=True)
        for executor in (self.decode, self.last):
            executor.shutdown(wait=busy, cancel_futures=True)
