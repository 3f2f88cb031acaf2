"""Request planning: which queries read a window of one metric, sized to the server's limits.

Pure (no I/O, no clock). One :class:`Request` is one metric over one time chunk
``[start_ms, end_ms)``, optionally restricted to a :class:`HostShard`.

Raw reads are instant queries of a range selector, ``metric{...}[<chunk + 1 ms>]``
evaluated at the chunk end: the result is every stored sample in the range once (no
lookback repeats, no resampling). Prometheus 2.x range selectors are closed,
``[t - r, t]``, 3.x left-open, ``(t - r, t]``; asking for one millisecond more than the
chunk and keeping ``start <= ts < end`` gives each sample exactly once on both.

Sizing: a chunk holds at most ``max_points_per_series`` points per series and about
``series x points <= max_samples_per_query`` samples, with ``series`` from the census of
the partition (what ``/api/v1/series`` reported). A softer target keeps responses small
enough to decode while other requests are in flight, but never cuts chunks below
``min_chunk_ms``. When even ``min_chunk_ms`` for all series exceeds the hard limit the plan
starts from host shards; when the server refuses anyway, :func:`split_refused` halves the
host set, then the time chunk.
"""

from __future__ import annotations

import math
from dataclasses import replace
from itertools import pairwise

from sources.prometheus.plan_types import (
    MIN_CHUNK_MS,
    TARGET_SAMPLES_PER_REQUEST,
    Census,
    Downsample,
    HostShard,
    Limits,
    PlanError,
    Request,
)
from sources.prometheus.promql import (
    HOST_LABELS,
    host_shard_matchers,
    promql_string,
    quote_meta,
    seconds,
    selector,
)

__all__ = [  # re-exported: callers import the planning vocabulary from here
    "DAY_MS",
    "HOST_LABELS",
    "MIN_CHUNK_MS",
    "TARGET_SAMPLES_PER_REQUEST",
    "Census",
    "Downsample",
    "HostShard",
    "Limits",
    "PlanError",
    "Request",
    "chunk_points",
    "day_partitions",
    "host_shard_matchers",
    "host_shards",
    "min_chunk_points",
    "plan_metric",
    "promql_string",
    "quote_meta",
    "seconds",
    "selector",
    "split_refused",
    "time_chunks",
]

DAY_MS = 86_400_000


def day_partitions(start_ms: int, end_ms: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut at UTC midnights."""
    cuts = range((start_ms // DAY_MS + 1) * DAY_MS, end_ms, DAY_MS)
    bounds = [start_ms, *cuts, end_ms]
    return [(a, b) for a, b in pairwise(bounds) if a < b]


def chunk_points(series: int, limits: Limits) -> int:
    """Points per series one request may cover for ``series`` series (at least 1)."""
    series = max(series, 1)
    hard = min(limits.max_points_per_series, limits.max_samples_per_query // series)
    soft = max(limits.target_samples_per_request // series, min_chunk_points(limits))
    return max(1, min(hard, soft))


def min_chunk_points(limits: Limits) -> int:
    """Samples per series in a ``min_chunk_ms`` chunk (both ends included)."""
    return limits.min_chunk_ms // limits.interval_ms + 1


def time_chunks(start_ms: int, end_ms: int, points: int, interval_ms: int, aligned: bool) -> list[tuple[int, int]]:
    """Equal chunks holding about ``points`` samples per series; multiples of the interval when aligned."""
    longest = max(points - 1, 1) * interval_ms
    n = math.ceil((end_ms - start_ms) / longest)
    if aligned:
        steps = (end_ms - start_ms) // interval_ms
        cuts = [start_ms + (steps * i // n) * interval_ms for i in range(n)]
    else:
        cuts = [start_ms + (end_ms - start_ms) * i // n for i in range(n)]
    bounds = [*cuts, end_ms]
    return [(a, b) for a, b in pairwise(bounds) if a < b]


def host_shards(census: Census, max_series: int) -> list[HostShard]:
    """Consecutive hosts packed into shards of at most ``max_series`` series (one host at least)."""
    shards: list[HostShard] = []
    for label, hosts in census.shards():
        if label is None:
            shards.append(HostShard(None, ()))
            continue
        batch: list[str] = []
        size = 0
        for host, n in hosts:
            if batch and size + n > max_series:
                shards.append(HostShard(label, tuple(batch)))
                batch, size = [], 0
            batch.append(host)
            size += n
        shards.append(HostShard(label, tuple(batch)))
    return shards


def plan_metric(
    census: Census, start_ms: int, end_ms: int, limits: Limits, downsample: Downsample | None = None
) -> list[Request]:
    """Requests reading ``census.metric`` over ``[start_ms, end_ms)`` (one partition)."""
    if census.total == 0 or start_ms >= end_ms:
        return []
    min_points = min_chunk_points(limits)
    if census.total * min_points <= limits.max_samples_per_query:
        shards: list[HostShard | None] = [None]
    else:
        shards = list(host_shards(census, max(limits.max_samples_per_query // min_points, 1)))
    requests = []
    for shard in shards:
        series = census.series_in(shard)
        points = chunk_points(series, limits)
        for a, b in time_chunks(start_ms, end_ms, points, limits.interval_ms, downsample is not None):
            requests.append(Request(census.metric, a, b, series, shard, downsample))
    return requests


def _halve(hosts: list[tuple[str, int]]) -> tuple[list[str], list[str]]:
    """Split hosts in two consecutive halves of about equal series count."""
    total, running, cut = sum(n for _, n in hosts), 0, 1
    for i, (_, n) in enumerate(hosts[:-1], start=1):
        running += n
        cut = i
        if running * 2 >= total:
            break
    return [h for h, _ in hosts[:cut]], [h for h, _ in hosts[cut:]]


def _shard_children(request: Request, census: Census) -> list[HostShard]:
    groups = census.shards()
    if request.shard is None:
        if len(groups) > 1:
            return [HostShard(label, tuple(h for h, _ in hosts) if label else ()) for label, hosts in groups]
        label, hosts = groups[0]
    else:
        label = request.shard.label
        wanted = set(request.shard.hosts)
        hosts = [(h, n) for lab, group in groups if lab == label for h, n in group if h in wanted]
    if label is None or len(hosts) < 2:
        return []
    return [HostShard(label, tuple(half)) for half in _halve(hosts)]


def split_refused(request: Request, census: Census, min_span_ms: int) -> list[Request]:
    """Smaller requests covering the same samples: fewer hosts, else half the time."""
    children = _shard_children(request, census)
    if children:
        return [replace(request, shard=s, series=census.series_in(s), splits=request.splits + 1) for s in children]
    span = request.end_ms - request.start_ms
    if span <= min_span_ms:
        raise PlanError(
            f"cannot split {request.metric} [{request.start_ms}, {request.end_ms}) any further (one host, {span} ms)"
        )
    step = request.downsample.step_ms if request.downsample else 1
    middle = request.start_ms + (span // step // 2) * step
    if middle <= request.start_ms:
        raise PlanError(f"cannot halve {request.metric} [{request.start_ms}, {request.end_ms}) on {step} ms steps")
    return [
        replace(request, start_ms=a, end_ms=b, splits=request.splits + 1)
        for a, b in ((request.start_ms, middle), (middle, request.end_ms))
    ]
