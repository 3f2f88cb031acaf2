"""Run planned requests in parallel, split refused ones, merge the answers into LongSamples.

Each worker thread fetches one request and decodes it right away (:func:`fetch_one`: the
numba kernel of ``jit_values`` releases the GIL, so decoding overlaps the other requests
in flight and the other workers' decoding) into a :class:`chunks.Chunk`. A request the
server refuses for its size is split (``plan.split_refused``: fewer hosts, then half the
time) and the parts are queued; any other failure cancels what is queued and raises. Each
metric is merged (``merge``) as soon as its last request is answered.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from cardhours.sources.prometheus.chunks import Chunk, SeriesIndex, window_blocks
from cardhours.sources.prometheus.client import PrometheusClient, PrometheusQueryError
from cardhours.sources.prometheus.decode import DecodeError, Matrix, decode_columns
from cardhours.sources.prometheus.merge import Merger
from cardhours.sources.prometheus.plan import DAY_MS, Census, PlanError, Request, split_refused
from cardhours.sources.prometheus.scratch import Scratch


@dataclass
class FetchStats:
    planned: int = 0
    answered: int = 0
    refused: int = 0  # "too many samples" answers, each split and retried
    max_splits: int = 0  # deepest chain of splits behind one answered request
    shards: set[tuple[str | None, tuple[str, ...]]] = field(default_factory=set)  # host shards answered
    n_bytes: int = 0
    seconds: float = 0.0


def window_text(start_ms: int, end_ms: int) -> str:
    """``[2026-03-02T00:00:00.000Z, 2026-03-03T00:00:00.000Z)``."""
    def iso(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return f"[{iso(start_ms)}, {iso(end_ms)})"


def describe(request: Request) -> str:
    """The request's window in UTC, plus its host shard."""
    shard = ""
    if request.shard is not None:
        hosts = request.shard.hosts
        shown = list(hosts) if len(hosts) <= 4 else f"{len(hosts)} hosts {hosts[0]}..{hosts[-1]}"
        shard = f" {request.shard.label or 'no host label'}: {shown}"
    return window_text(request.start_ms, request.end_ms) + shard


def fetch_one(client: PrometheusClient, request: Request, selector: str, index: SeriesIndex | None = None,
              scratch: Scratch | None = None) -> Chunk:
    """One request, decoded (into ``scratch``'s memory when given) and cut to its window
    (downsampled points moved to their bucket start)."""
    path, params = request.http(selector)
    window = describe(request)
    body = client.get(path, params, query=params["query"], window=window)
    n_bytes = len(body)
    index = SeriesIndex() if index is None else index
    try:
        columns = decode_columns(body, request.ts_shift_ms, scratch)
        if isinstance(columns, Matrix):  # not the compact layout: the reference decoder's result
            series, counts, values = columns.labels, columns.counts, columns.values
            ts_us = (columns.ts_ms - request.ts_shift_ms) * 1000
        else:
            series, counts, ts_us, values = columns.texts, columns.counts, columns.ts_us, columns.values
        del columns
        ids = index.ids(request.metric, series)
    except DecodeError as exc:
        raise client.undecodable(path, params["query"], window, exc) from exc
    del body
    start_us, end_us = request.start_ms * 1000, request.end_ms * 1000
    blocks = window_blocks(ts_us, counts, start_us, end_us)
    if blocks is None:  # not in time order: keep the window's samples by copying them
        keep = (ts_us >= start_us) & (ts_us < end_us)
        owner = np.repeat(np.arange(len(counts)), counts)[keep]
        counts = np.bincount(owner, minlength=len(counts))
        ts_us, values = ts_us[keep], values[keep]
        blocks = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64), counts
    offsets, lengths = blocks
    return Chunk(request, ids, offsets, lengths.astype(np.int64), ts_us, values, n_bytes)


Partition = tuple[str, int, int]  # metric, start ms, end ms (one UTC day at most)


def fetch_all(client: PrometheusClient, partitions: list[Partition], *, probe: Callable[[str, int, int], Census],
              plan: Callable[[Census, int, int], list[Request]], selector: str, max_parallel: int,
              min_span_ms: int) -> tuple[list[Census], LongSamples, FetchStats]:
    """Probe each partition, plan it as soon as its census is in, fetch every request (refused ones
    split); all on one pool, so probes overlap fetches. Each metric is merged as soon as its last
    request is answered. Censuses are returned in partition order."""
    stats = FetchStats()
    started = time.perf_counter()
    censuses: dict[int, Census] = {}
    merger = Merger()
    remaining = Counter(metric for metric, _, _ in partitions)  # per metric: partitions to plan + requests open
    pool = ThreadPoolExecutor(max_workers=max(max_parallel, 1), thread_name_prefix="prometheus")
    probes: dict[Future[Census], int] = {pool.submit(probe, *part): i for i, part in enumerate(partitions)}
    fetches: dict[Future[Chunk], Request] = {}
    by_day: dict[tuple[str, int], Census] = {}
    try:
        while probes or fetches:
            done, _ = wait([*probes, *fetches], return_when=FIRST_COMPLETED)
            for future in done:
                if future in probes:
                    i = probes.pop(future)
                    metric = partitions[i][0]
                    census = censuses[i] = future.result()
                    by_day[(census.metric, partitions[i][1] // DAY_MS)] = census
                    work = plan(census, partitions[i][1], partitions[i][2])
                    stats.planned += len(work)
                else:
                    request = fetches.pop(future)
                    metric = request.metric
                    work = _settle(future, request, by_day, min_span_ms, merger, stats)
                fetches.update({pool.submit(fetch_one, client, r, selector, merger.index, merger.scratch): r for r in work})
                remaining[metric] += len(work) - 1
                if not remaining[metric]:
                    merger.close(metric)
    finally:
        pool.shutdown(wait=not (probes or fetches), cancel_futures=True)
    long = merger.result()
    stats.seconds = time.perf_counter() - started
    return [censuses[i] for i in range(len(partitions))], long, stats


def _settle(future: Future[Chunk], request: Request, censuses: Mapping[tuple[str, int], Census],
            min_span_ms: int, merger: Merger, stats: FetchStats) -> list[Request]:
    """Keep an answered request's chunk; for a refused one return its parts; raise anything else."""
    try:
        chunk = future.result()
    except PrometheusQueryError as exc:
        if not exc.too_many_samples:
            raise
        stats.refused += 1
        try:
            return split_refused(request, censuses[(request.metric, request.start_ms // DAY_MS)], min_span_ms)
        except PlanError as err:
            exc.add_note(f"cardhours cannot make this request smaller: {err}")
            raise exc from err
    merger.add(chunk)
    stats.answered += 1
    stats.n_bytes += chunk.n_bytes
    stats.max_splits = max(stats.max_splits, request.splits)
    if request.shard is not None:
        stats.shards.add((request.shard.label, request.shard.hosts))
    return []

