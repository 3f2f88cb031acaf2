"""Run planned requests in parallel, split refused ones, merge the answers into LongSamples.

Each worker thread fetches one request and decodes it right away into the columns it will
be merged from, so decoding overlaps the other requests in flight: series ids from a
read-wide :class:`SeriesIndex` (a label set's JSON text is parsed once per read, not once
per chunk), timestamps as int64 microseconds, values as float64, and per series one block
``(offset, length)`` of the samples inside the request's window (samples are not copied
to cut the window: a range selector's extra edge samples are only trimmed off the blocks;
that needs each series' samples in time order, which is checked, and a chunk where they are
not is cut by copying). Large arrays come from Arrow's memory pool (:func:`pooled`).
A request the server refuses for its size is split (``plan.split_refused``: fewer hosts,
then half the time) and the parts are queued; any other failure cancels what is queued and
raises.

Merging is per metric and starts as soon as a metric's last request is answered, while
the other metrics are still being fetched, so only the last metric's merge and a
zero-copy concatenation remain after the last response. ``series_id`` is the rank of the
label set over the whole read, ordered by metric name and then by the label set as
Prometheus orders series, so a series read in several chunks keeps one id and the output
(sorted by ``series_id, ts``) does not depend on which request finished first. Within a
metric, chunks are disjoint in time or in series, so ordering blocks by ``(series_id,
chunk start)`` is a full sort; runs of blocks already adjacent in one chunk are copied at
once. The samples frame holds one Arrow chunk per metric.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import chain

import numpy as np
import polars as pl
import pyarrow as pa

from cardhours.sources.prometheus import SAMPLES_SCHEMA, LongSamples
from cardhours.sources.prometheus.client import PrometheusClient, PrometheusQueryError
from cardhours.sources.prometheus.decode import DecodeError, Matrix, decode_columns, parse_labels
from cardhours.sources.prometheus.plan import DAY_MS, Census, PlanError, Request, split_refused


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


Partition = tuple[str, int, int]  # metric, start ms, end ms (one UTC day at most)



SeriesKey = tuple[str, ...]  # (metric name, then each label's name and value, in label-name order)


class SeriesIndex:
    """The label sets of one read, each with an id in first-seen order; shared by the worker
    threads. A label set's JSON text (Prometheus writes a series' labels the same way in every
    answer) is parsed once per read.

    Keys order series as Prometheus does (by label name, then value, label after label); they
    are flat tuples, one object per series, so a read of many series leaves the garbage
    collector little to walk."""

    def __init__(self) -> None:
        self.keys: list[SeriesKey] = []
        self.labels: list[dict[str, str]] = []
        self._by_key: dict[SeriesKey, int] = {}
        self._by_text: dict[str, dict[bytes, int]] = {}
        self._lock = threading.Lock()

    def ids(self, metric: str, series: Sequence[bytes] | Sequence[Mapping[str, str]]) -> np.ndarray:
        """Ids of ``series`` (``"metric"`` JSON texts, or parsed label sets) read for ``metric``.
        A series without ``__name__`` (aggregations drop it) is named ``metric``; one named
        otherwise is an answer to another question: DecodeError."""
        with self._lock:
            known = self._by_text.setdefault(metric, {})
        ids = np.empty(len(series), np.int64)
        for i, one in enumerate(series):
            if isinstance(one, bytes):
                found = known.get(one)
                if found is None:
                    try:
                        labels = parse_labels(one)
                    except ValueError as exc:
                        raise DecodeError(str(exc)) from exc
                    found = known[one] = self._register(metric, labels)
                ids[i] = found
            else:
                ids[i] = self._register(metric, one)
        return ids

    def _register(self, metric: str, labels: Mapping[str, str]) -> int:
        name = labels.get("__name__")
        if name is None:
            labels = {"__name__": metric, **labels}
        elif name != metric:
            raise DecodeError(f"asked for {metric}, the answer has a series of {name}")
        key = (metric, *chain.from_iterable(sorted(labels.items())))
        with self._lock:
            found = self._by_key.get(key)
            if found is None:
                found = self._by_key[key] = len(self.keys)
                self.keys.append(key)
                self.labels.append(dict(labels))
        return found


@dataclass(frozen=True)
class Chunk:
    """One answered request: series ``ids[i]`` owns ``ts_us``/``values`` positions
    ``offsets[i] : offsets[i] + lengths[i]``, its samples inside the request's window."""

    request: Request
    ids: np.ndarray  # int64 SeriesIndex ids
    offsets: np.ndarray  # int64
    lengths: np.ndarray  # int64; 0 when none of the series' samples is in the window
    ts_us: np.ndarray  # int64 microseconds since the epoch (bucket starts when downsampled)
    values: np.ndarray  # float64
    n_bytes: int

    def samples(self) -> tuple[np.ndarray, np.ndarray]:
        """The window's (ts_us, values), series after series."""
        pieces = [slice(o, o + n) for o, n in zip(self.offsets.tolist(), self.lengths.tolist()) if n]
        if not pieces:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        return (np.concatenate([self.ts_us[p] for p in pieces]), np.concatenate([self.values[p] for p in pieces]))


def pooled(n: int, dtype: type[np.generic]) -> np.ndarray:
    """An uninitialized array from Arrow's memory pool, which keeps memory it got from the
    OS for reuse: the large per-response and merged arrays of a read reuse each other's
    pages instead of each touching fresh ones (first-touch page faults are a large part of
    the reader's CPU on virtual machines)."""
    return np.frombuffer(pa.allocate_buffer(n * np.dtype(dtype).itemsize), dtype)


def micros(seconds: np.ndarray, shift_ms: int = 0) -> np.ndarray:
    """Decimal seconds (at most three decimals) -> exact int64 microseconds, less ``shift_ms``."""
    ms = np.multiply(seconds, 1000.0, out=pooled(len(seconds), np.float64))
    np.rint(ms, out=ms)
    us = pooled(len(seconds), np.int64)
    np.copyto(us, ms, casting="unsafe")  # integral floats: exact
    del ms
    if shift_ms:
        us -= shift_ms
    us *= 1000
    return us


def window_blocks(ts_us: np.ndarray, counts: np.ndarray, start_us: int,
                  end_us: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(offset, length) per series of its samples in ``[start_us, end_us)``; None when a
    series' timestamps are out of order (then only a copy can cut the window)."""
    offsets = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=offsets[1:])
    if not len(counts):
        return offsets, counts
    if not _ascending(ts_us, offsets):
        return None
    # In time order, the samples outside the window are a prefix and a suffix of each series.
    if ts_us[offsets].min() >= start_us and ts_us[offsets + counts - 1].max() < end_us:
        return offsets, counts
    before = np.add.reduceat(ts_us < start_us, offsets, dtype=np.int64)
    inside = np.add.reduceat(ts_us < end_us, offsets, dtype=np.int64) - before
    return offsets + before, inside


def _ascending(ts_us: np.ndarray, offsets: np.ndarray) -> bool:
    """Whether every series' timestamps increase (series boundaries excepted)."""
    steps = ts_us[1:] > ts_us[:-1]
    steps[offsets[1:] - 1] = True
    return bool(steps.all())


def fetch_one(client: PrometheusClient, request: Request, selector: str, index: SeriesIndex | None = None) -> Chunk:
    """One request, decoded and cut to its window (downsampled points moved to their bucket start)."""
    path, params = request.http(selector)
    window = describe(request)
    body = client.get(path, params, query=params["query"], window=window)
    n_bytes = len(body)
    index = SeriesIndex() if index is None else index
    try:
        columns = decode_columns(body)
        if isinstance(columns, Matrix):  # not the compact layout: the reference decoder's result
            series, counts, values = columns.labels, columns.counts, columns.values
            ts_us = (columns.ts_ms - request.ts_shift_ms) * 1000
        else:
            series, counts, values = columns.texts, columns.counts, columns.values
            ts_us = micros(columns.seconds, request.ts_shift_ms)
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
                fetches.update({pool.submit(fetch_one, client, r, selector, merger.index): r for r in work})
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


@dataclass(frozen=True)
class MetricSamples:
    """One metric's samples in output order; ``series_id`` still counts from 0 within the metric."""

    ids: np.ndarray  # SeriesIndex ids in rank order
    series_id: np.ndarray  # uint32 per sample
    ts_us: np.ndarray
    values: np.ndarray


class Merger:
    """Chunks in, LongSamples out: ``add`` each answered chunk, ``close`` a metric once all of
    its chunks are in (merges it), ``result`` at the end."""

    def __init__(self, index: SeriesIndex | None = None) -> None:
        self.index = SeriesIndex() if index is None else index
        self._open: dict[str, list[Chunk]] = {}
        self._merged: dict[str, MetricSamples] = {}

    def add(self, chunk: Chunk) -> None:
        self._open.setdefault(chunk.request.metric, []).append(chunk)

    def close(self, metric: str) -> None:
        chunks = self._open.pop(metric, [])
        if metric in self._merged:
            raise RuntimeError(f"metric {metric} merged twice")
        merged = merge_metric(chunks, self.index.keys)
        if merged is not None:
            self._merged[metric] = merged

    def result(self) -> LongSamples:
        for metric in list(self._open):
            self.close(metric)
        parts = [self._merged.pop(metric) for metric in sorted(self._merged)]
        if not parts:
            return LongSamples.empty()
        n_series = sum(len(part.ids) for part in parts)
        if n_series > np.iinfo(np.uint32).max:
            raise ValueError(f"{n_series} series do not fit a UInt32 series_id")
        frames, first = [], 0
        for part in parts:  # ids of a metric follow those of the metrics before it
            if first:
                np.add(part.series_id, first, out=part.series_id)
            first += len(part.ids)
            frames.append(pl.DataFrame({"series_id": part.series_id, "ts": pl.Series(part.ts_us).cast(pl.Datetime("us")),
                                        "value": part.values}, schema=SAMPLES_SCHEMA))
        labels = self.index.labels
        series = _series_frame([labels[i] for part in parts for i in part.ids.tolist()])
        return LongSamples(series, pl.concat(frames, rechunk=False))


def merge_metric(chunks: list[Chunk], keys: Sequence[SeriesKey]) -> MetricSamples | None:
    """One metric's chunks in output order: series by label set, then samples by time."""
    chunks = [c for c in chunks if len(c.ids)]
    if not chunks:
        return None
    ids = np.concatenate([c.ids for c in chunks])
    length = np.concatenate([c.lengths for c in chunks])
    offset = np.concatenate([c.offsets for c in chunks])
    which = np.repeat(np.arange(len(chunks)), [len(c.ids) for c in chunks])
    start = np.repeat(np.array([c.request.start_ms for c in chunks], np.int64), [len(c.ids) for c in chunks])
    alive = length > 0
    if not alive.any():
        return None
    if not alive.all():
        ids, length, offset, which, start = ids[alive], length[alive], offset[alive], which[alive], start[alive]
    present = np.unique(ids)
    ranked = np.array(sorted(present.tolist(), key=keys.__getitem__), np.int64)
    rank = np.empty(int(present[-1]) + 1, np.int64)
    rank[ranked] = np.arange(len(ranked))
    local = rank[ids]
    blocks = np.lexsort((start, local))
    which, offset, length = which[blocks], offset[blocks], length[blocks]
    ts, values = _gather(chunks, which, offset, length)
    return MetricSamples(ranked, _repeat(local[blocks], length), ts, values)


def _series_frame(label_sets: list[dict[str, str]]) -> pl.DataFrame:
    names = sorted({name for labels in label_sets for name in labels} - {"__name__"})
    frame = pl.from_dicts(label_sets, schema={"__name__": pl.String, **dict.fromkeys(names, pl.String)})
    return frame.select(pl.Series("series_id", np.arange(len(label_sets), dtype=np.uint32)), "__name__", *names)


def _gather(chunks: list[Chunk], which: np.ndarray, offset: np.ndarray,
            length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Blocks (chunk, offset, length) copied in order into new arrays; adjacent blocks of one
    chunk as one run."""
    new_run = np.ones(len(which), bool)
    new_run[1:] = (which[1:] != which[:-1]) | (offset[1:] != offset[:-1] + length[:-1])
    starts = np.flatnonzero(new_run)
    sizes = np.add.reduceat(length, starts) if len(starts) else starts
    runs = zip(which[starts].tolist(), offset[starts].tolist(), (offset[starts] + sizes).tolist())
    ts_pieces, value_pieces = [], []
    for w, lo, hi in runs:
        chunk = chunks[w]
        ts_pieces.append(chunk.ts_us[lo:hi])
        value_pieces.append(chunk.values[lo:hi])
    total = int(length.sum())
    ts, values = pooled(total, np.int64), pooled(total, np.float64)
    np.concatenate(ts_pieces, out=ts)
    np.concatenate(value_pieces, out=values)
    return ts, values


def _repeat(ranks: np.ndarray, length: np.ndarray) -> np.ndarray:
    """``np.repeat(ranks, length)`` as uint32 in pooled memory (``ranks`` ascending, lengths > 0)."""
    out = pooled(int(length.sum()), np.uint32)
    out.fill(0)
    starts = np.cumsum(length[:-1])
    out[0] = ranks[0]
    out[starts] = np.diff(ranks)
    np.cumsum(out, dtype=np.uint32, out=out)
    return out
