"""Run planned requests in parallel, split refused ones, assemble the answers into LongSamples.

Each worker thread fetches one request's body and goes on to the next request; the
decoding thread takes the body (:func:`scan_answer`): with the numba decoder it scans it
(where each series' samples are and how many are in the window, ``place.scan``), else, or
when its layout is not the compact one, it decodes it (``assemble.decode_chunk``). A request
the server refuses for its size is split (``plan.split_refused``: fewer hosts, then half the
time) and the parts are queued; any other failure cancels what is queued and raises. As soon
as a metric's last request is answered it is assembled (``assemble``: merged, or with the
numba decoder decoded straight into the metric's output arrays on the decoding threads,
which overlaps the other metrics' requests), while the fetch pool goes on.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial

from sources.prometheus import LongSamples
from sources.prometheus.assemble import Assembly, decode_chunk
from sources.prometheus.chunks import Chunk, SeriesIndex
from sources.prometheus.client import PrometheusClient, PrometheusQueryError
from sources.prometheus.decode import DecodeError
from sources.prometheus.place import Body, Scanned, scan
from sources.prometheus.plan import DAY_MS, Census, PlanError, Request, split_refused
from sources.prometheus.pools import Pools
from sources.prometheus.scratch import Scratch

Partition = tuple[str, int, int]  # (metric, start ms, end ms): one metric over one UTC day


@dataclass
class FetchStats:
    planned: int = 0
    answered: int = 0
    refused: int = 0  # "too many samples" answers, each split and retried
    max_splits: int = 0  # deepest chain of splits behind one answered request
    shards: set[tuple[str | None, tuple[str, ...]]] = field(default_factory=set)  # host shards answered
    n_bytes: int = 0
    seconds: float = 0.0
    decoder: str = "pyarrow"  # decoders.choose: numba or pyarrow
    fallbacks: int = 0  # numba: metrics decoded the pyarrow way although every answer was scanned

    @classmethod
    def total(cls, parts: Sequence[FetchStats]) -> FetchStats:
        """Several fetches (a read in shards) as one: counts and times added, the deepest split."""
        if len(parts) == 1:
            return parts[0]
        return cls(
            planned=sum(p.planned for p in parts),
            answered=sum(p.answered for p in parts),
            refused=sum(p.refused for p in parts),
            max_splits=max((p.max_splits for p in parts), default=0),
            shards=set().union(*(p.shards for p in parts)),
            n_bytes=sum(p.n_bytes for p in parts),
            seconds=sum(p.seconds for p in parts),
            decoder=parts[0].decoder if parts else "pyarrow",
            fallbacks=sum(p.fallbacks for p in parts),
        )


def window_text(start_ms: int, end_ms: int) -> str:
    """``[2026-03-02T00:00:00.000Z, 2026-03-03T00:00:00.000Z)``."""

    def iso(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    return f"[{iso(start_ms)}, {iso(end_ms)})"


def describe(request: Request) -> str:
    """The request's window in UTC, plus its host shard."""
    shard = ""
    if request.shard is not None:
        hosts = request.shard.hosts
        shown = list(hosts) if len(hosts) <= 4 else f"{len(hosts)} hosts {hosts[0]}..{hosts[-1]}"
        shard = f" {request.shard.label or 'no host label'}: {shown}"
    return window_text(request.start_ms, request.end_ms) + shard


def fetch_body(
    client: PrometheusClient, request: Request, selector: str, into: Scratch | None = None
) -> tuple[Body, Callable[[DecodeError], Exception]]:
    """The answer's body (in a buffer from ``into`` when given), and how to report it
    undecodable (naming URL, query and window)."""
    path, params = request.http(selector)
    window = describe(request)
    body = client.get(path, params, query=params["query"], window=window, into=into)
    return body, partial(client.undecodable, path, params["query"], window)


def fetch_one(
    client: PrometheusClient,
    request: Request,
    selector: str,
    index: SeriesIndex | None = None,
    scratch: Scratch | None = None,
) -> Chunk:
    """One request, decoded the reference way (``assemble.decode_chunk``)."""
    body, undecodable = fetch_body(client, request, selector)
    try:
        return decode_chunk(body, request, SeriesIndex() if index is None else index, scratch)
    except DecodeError as exc:
        raise undecodable(exc) from exc


def scan_answer(
    body: Body, undecodable: Callable[[DecodeError], Exception], request: Request, assembly: Assembly
) -> Scanned | Chunk:
    """One answer scanned for placed decoding (``place.scan``, numba), else decoded into a chunk."""
    try:
        scanned = scan(body, request, assembly.index) if assembly.placed else None
        if scanned is not None:
            return scanned
        chunk = decode_chunk(body, request, assembly.index, assembly.scratch)
    except DecodeError as exc:
        raise undecodable(exc) from exc
    assembly.scratch.give(body)
    return chunk


def fetch_all(
    client: PrometheusClient,
    partitions: list[Partition],
    *,
    probe: Callable[[str, int, int], Census],
    plan: Callable[[Census, int, int], list[Request]],
    selector: str,
    max_parallel: int,
    min_span_ms: int,
    decoder: str = "pyarrow",
) -> tuple[list[Census], LongSamples, FetchStats]:
    """Probe each partition, plan it as soon as its census is in, fetch every request (refused ones
    split); all on one pool, so probes overlap fetches. Each body is decoded (``pyarrow``) or
    scanned (``numba``) on the decoding thread as soon as it is in; once a metric's last answer
    is in, the metric is merged, or its answers decoded into place on that thread while the
    other metrics are fetched (on one thread per CPU, at most 4, when nothing else is in
    flight). Censuses are returned in partition order."""
    stats = FetchStats(decoder=decoder)
    started = time.perf_counter()
    censuses: dict[int, Census] = {}
    assembly = Assembly(
        lambda request, exc: client.undecodable(*_named(request, selector), exc), placed=decoder == "numba"
    )
    remaining = Counter(metric for metric, _, _ in partitions)  # per metric: partitions to plan + requests open
    pools = Pools(max_parallel)
    submit, pool = pools.submit, pools.fetch
    probes: dict[Future[Census], int] = {submit(pool, probe, *part): i for i, part in enumerate(partitions)}
    fetches: dict[Future[tuple[Body, Callable]], Request] = {}
    scans: dict[Future[Scanned | Chunk], Request] = {}
    decoding: dict[Future[bool], str] = {}
    by_day: dict[tuple[str, int], Census] = {}
    try:
        while probes or fetches or scans or decoding:
            future = pools.finished.get()
            if future in decoding:
                assembly.job_done(decoding.pop(future), future.result())
                continue
            if future in probes:
                i = probes.pop(future)
                metric = partitions[i][0]
                census = censuses[i] = future.result()
                by_day[(census.metric, partitions[i][1] // DAY_MS)] = census
                work = plan(census, partitions[i][1], partitions[i][2])
                stats.planned += len(work)
            elif future in fetches:  # the body is in: scanned on the decoding thread, the next request goes out
                request = fetches.pop(future)
                metric = request.metric
                work = _refused(future, request, by_day, min_span_ms, stats)
                if work is None:
                    scans[submit(pools.decode, scan_answer, *future.result(), request, assembly)] = request
                    continue
            else:
                request = scans.pop(future)
                metric = request.metric
                _keep(future.result(), request, assembly, stats)
                work = []
            fetches.update({submit(pool, fetch_body, client, r, selector, assembly.scratch): r for r in work})
            remaining[metric] += len(work) - 1
            if not remaining[metric]:
                executor = pools.decode if fetches or probes or scans else pools.last
                decoding.update({submit(executor, job): metric for job in assembly.close(metric)})
    finally:
        pools.shutdown(busy=bool(probes or fetches or scans or decoding))
    long = assembly.result()
    stats.fallbacks = assembly.fallbacks
    stats.seconds = time.perf_counter() - started
    return [censuses[i] for i in range(len(partitions))], long, stats


def _named(request: Request, selector: str) -> tuple[str, str, str]:
    """(path, query, window) of ``request``, as its errors name it."""
    path, params = request.http(selector)
    return path, params["query"], describe(request)


def _refused(
    future: Future[tuple[Body, Callable]],
    request: Request,
    censuses: Mapping[tuple[str, int], Census],
    min_span_ms: int,
    stats: FetchStats,
) -> list[Request] | None:
    """The parts of a request the server refused for its size; None when it was answered.
    Any other failure is raised."""
    exc = future.exception()
    if exc is None:
        return None
    if not isinstance(exc, PrometheusQueryError) or not exc.too_many_samples:
        raise exc
    stats.refused += 1
    try:
        return split_refused(request, censuses[(request.metric, request.start_ms // DAY_MS)], min_span_ms)
    except PlanError as err:
        exc.add_note(f"cardhours cannot make this request smaller: {err}")
        raise exc from err


def _keep(answer: Scanned | Chunk, request: Request, assembly: Assembly, stats: FetchStats) -> None:
    """An answered request's scanned answer (or chunk) into the assembly, counted."""
    assembly.add(answer)
    stats.answered += 1
    stats.n_bytes += len(answer.body) if isinstance(answer, Scanned) else answer.n_bytes
    stats.max_splits = max(stats.max_splits, request.splits)
    if request.shard is not None:
        stats.shards.add((request.shard.label, request.shard.hosts))
