"""Run planned requests in parallel, split refused ones, merge the answers into LongSamples.

Each worker thread fetches one request and decodes it right away, so decoding overlaps the
other requests in flight (the CSV parse releases the GIL). A request the server refuses
for its size is split (``plan.split_refused``: fewer hosts, then half the time) and the
parts are queued; any other failure cancels what is queued and raises.

Merging assigns ``series_id`` by label set over all chunks, ordered by metric name and
then by the label set as Prometheus orders series, so a series read in several chunks
keeps one id and the output (sorted by ``series_id, ts``) does not depend on which
request finished first. Chunks are disjoint in time or in series, so ordering blocks of
samples by ``(series_id, chunk start)`` is a full sort; runs of blocks already adjacent
in one chunk are copied at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np
import polars as pl

from cardhours.sources.prometheus import SAMPLES_SCHEMA, LongSamples
from cardhours.sources.prometheus.client import PrometheusClient, PrometheusQueryError
from cardhours.sources.prometheus.decode import DecodeError, Matrix, decode_matrix
from cardhours.sources.prometheus.plan import DAY_MS, Census, PlanError, Request, split_refused


@dataclass(frozen=True)
class Chunk:
    request: Request
    matrix: Matrix  # only the samples inside the request's window
    n_bytes: int


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


def fetch_one(client: PrometheusClient, request: Request, selector: str) -> Chunk:
    """One request, decoded and cut to its window (downsampled points moved to their bucket start)."""
    path, params = request.http(selector)
    window = describe(request)
    body = client.get(path, params, query=params["query"], window=window)
    try:
        matrix = decode_matrix(body)
    except DecodeError as exc:
        raise client.undecodable(path, params["query"], window, exc) from exc
    if request.downsample is not None:  # functions drop the metric name
        matrix = Matrix([{"__name__": request.metric, **labels} for labels in matrix.labels],
                        matrix.counts, matrix.ts_ms, matrix.values)
    return Chunk(request, matrix.shifted(request.ts_shift_ms).window(request.start_ms, request.end_ms), len(body))


Partition = tuple[str, int, int]  # metric, start ms, end ms (one UTC day at most)


def fetch_all(client: PrometheusClient, partitions: list[Partition], *, probe: Callable[[str, int, int], Census],
              plan: Callable[[Census, int, int], list[Request]], selector: str, max_parallel: int,
              min_span_ms: int) -> tuple[list[Census], list[Chunk], FetchStats]:
    """Probe each partition, plan it as soon as its census is in, fetch every request (refused ones
    split); all on one pool, so probes overlap fetches. Censuses are returned in partition order."""
    stats = FetchStats()
    started = time.perf_counter()
    censuses: dict[int, Census] = {}
    chunks: list[Chunk] = []
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
                    census = censuses[i] = future.result()
                    by_day[(census.metric, partitions[i][1] // DAY_MS)] = census
                    work = plan(census, partitions[i][1], partitions[i][2])
                    stats.planned += len(work)
                else:
                    request = fetches.pop(future)
                    work = _settle(future, request, by_day, min_span_ms, chunks, stats)
                fetches.update({pool.submit(fetch_one, client, r, selector): r for r in work})
    finally:
        pool.shutdown(wait=not (probes or fetches), cancel_futures=True)
    stats.seconds = time.perf_counter() - started
    return [censuses[i] for i in range(len(partitions))], chunks, stats


def _settle(future: Future[Chunk], request: Request, censuses: Mapping[tuple[str, int], Census],
            min_span_ms: int, chunks: list[Chunk], stats: FetchStats) -> list[Request]:
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
    chunks.append(chunk)
    stats.answered += 1
    stats.n_bytes += chunk.n_bytes
    stats.max_splits = max(stats.max_splits, request.splits)
    if request.shard is not None:
        stats.shards.add((request.shard.label, request.shard.hosts))
    return []


def _series_key(labels: Mapping[str, str]) -> tuple:
    return labels.get("__name__", ""), tuple(sorted(labels.items()))


def _series_frame(label_sets: list[dict[str, str]]) -> pl.DataFrame:
    names = sorted({name for labels in label_sets for name in labels} - {"__name__"})
    columns = {"series_id": pl.Series(np.arange(len(label_sets), dtype=np.uint32)),
               "__name__": pl.Series([labels.get("__name__") for labels in label_sets], dtype=pl.String)}
    for name in names:
        columns[name] = pl.Series([labels.get(name) for labels in label_sets], dtype=pl.String)
    return pl.DataFrame(columns)


def merge(chunks: list[Chunk]) -> LongSamples:
    """One LongSamples with ids by label set, samples sorted by ``series_id, ts``."""
    chunks = [c for c in chunks if len(c.matrix.labels)]
    if not chunks:
        return LongSamples.empty()
    index: dict[tuple, int] = {}
    local_ids = []
    for chunk in chunks:
        local_ids.append(np.array([index.setdefault(_series_key(lab), len(index)) for lab in chunk.matrix.labels]))
    keys = list(index)
    order = sorted(range(len(keys)), key=keys.__getitem__)
    rank = np.empty(len(keys), np.int64)
    rank[order] = np.arange(len(keys))
    label_sets = [dict(keys[i][1]) for i in order]

    gid = np.concatenate([rank[ids] for ids in local_ids])
    start = np.concatenate([np.full(len(ids), c.request.start_ms) for ids, c in zip(local_ids, chunks)])
    which = np.concatenate([np.full(len(ids), i) for i, ids in enumerate(local_ids)])
    offset = np.concatenate([np.cumsum(c.matrix.counts) - c.matrix.counts for c in chunks])
    length = np.concatenate([c.matrix.counts for c in chunks])
    blocks = np.lexsort((start, gid))
    ts, values = _gather(chunks, which[blocks], offset[blocks], length[blocks])
    ts *= 1000  # ms -> us
    samples = pl.DataFrame({
        "series_id": pl.Series(np.repeat(gid[blocks].astype(np.uint32), length[blocks])),
        "ts": pl.Series(ts).cast(pl.Datetime("us")),
        "value": pl.Series(values),
    }, schema=SAMPLES_SCHEMA)
    return LongSamples(_series_frame(label_sets), samples)


def _gather(chunks: list[Chunk], which: np.ndarray, offset: np.ndarray,
            length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Copy blocks (chunk, offset, length) in order; adjacent blocks of one chunk as one run."""
    total = int(length.sum())
    ts, values = np.empty(total, np.int64), np.empty(total, np.float64)
    new_run = np.ones(len(which), bool)
    new_run[1:] = (which[1:] != which[:-1]) | (offset[1:] != offset[:-1] + length[:-1])
    starts = np.flatnonzero(new_run)
    ends = np.append(starts[1:], len(which))
    pos = 0
    for a, b in zip(starts.tolist(), ends.tolist()):
        matrix = chunks[int(which[a])].matrix
        lo, n = int(offset[a]), int(length[a:b].sum())
        ts[pos:pos + n] = matrix.ts_ms[lo:lo + n]
        values[pos:pos + n] = matrix.values[lo:lo + n]
        pos += n
    return ts, values
