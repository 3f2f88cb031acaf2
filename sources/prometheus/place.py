"""Placed decoding (``cardhours[fast]``, numba): each response's samples decoded straight
into their place in the metric's output arrays, with no per-response arrays and no merge copy.

The decoding thread :func:`scan` s each response as it arrives: where each series' values
list is, the series' ids, and how many of its samples are inside the request's window
(``jit_place.scan_lists``). Once every response of a metric is scanned, :func:`place`
knows the output order (series by label set, then requests by start: the order
``merge.merge_metric`` gives) and so where each list's samples go; :func:`decode_placed`
then decodes each response into the metric's arrays (``jit_values.decode_lists``, GIL
released, responses in parallel), writing series ids as it goes. Any response the kernel
does not read exactly as counted (another layout, timestamps out of order, too many values
for Python's ``float``) sends the whole metric the default way: per-response chunks
(``csv_values``) merged by ``merge.merge_metric``. The result is the same either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from sources.prometheus.chunks import SeriesIndex, SeriesKey
from sources.prometheus.decode import COMPLETE_MATRIX, matrix_start
from sources.prometheus.merge import MetricSamples, Take
from sources.prometheus.plan import Request

Body = bytes | np.ndarray  # a response body: bytes, or a uint8 array over a Scratch buffer (body.read_into)


@dataclass(frozen=True)
class Scanned:
    """One answered request, not yet decoded: list ``i`` of ``body`` is
    ``body[starts[i]:ends[i]]``, of series ``ids[i]``, with ``counts[i]`` samples in the window."""

    request: Request
    body: Body
    ids: np.ndarray  # int64 SeriesIndex ids
    starts: np.ndarray  # int64
    ends: np.ndarray  # int64
    counts: np.ndarray  # int64


@dataclass(frozen=True)
class Job:
    """Where one scanned response's lists go in its metric's arrays."""

    scanned: Scanned
    dest: np.ndarray  # int64 first output position per list
    rank: np.ndarray  # int64 series id within the metric per list


def scan(body: Body, request: Request, index: SeriesIndex) -> Scanned | None:
    """``body`` scanned (``jit_place.scan_lists``), or None when it is not in the compact layout
    the kernels read. DecodeError when a series is not ``request.metric``'s."""
    from sources.prometheus.jit_place import scan_lists  # imports numba: only when decoding
    from sources.prometheus.jit_values import OK

    u8 = np.frombuffer(body, np.uint8)
    first = matrix_start(u8[: len(COMPLETE_MATRIX)].tobytes())
    if first is None:
        return None
    room = len(u8) // 32 + 1  # a series takes more than 32 bytes
    texts, starts, ends, counts = np.empty((room, 2), np.int64), *(np.empty(room, np.int64) for _ in range(3))
    status, n, tail = scan_lists(
        u8, first, request.ts_shift_ms, request.start_ms * 1000, request.end_ms * 1000, texts, starts, ends, counts
    )
    if status != OK or u8[tail : tail + 2].tobytes() != b"]}" or b'"warnings"' in u8[tail:].tobytes():
        return None
    ids = index.ids(request.metric, [u8[a:b].tobytes() for a, b in texts[:n].tolist()])
    return Scanned(request, body, ids, starts[:n].copy(), ends[:n].copy(), counts[:n].copy())


def place(items: Sequence[Scanned], keys: Sequence[SeriesKey], take: Take) -> tuple[MetricSamples, list[Job]] | None:
    """One metric's output arrays (uninitialized, from ``take``) and each response's job;
    None when no sample is in any window."""
    ids = np.concatenate([s.ids for s in items])
    counts = np.concatenate([s.counts for s in items])
    alive = counts > 0
    if not alive.any():
        return None
    start = np.repeat(np.array([s.request.start_ms for s in items], np.int64), [len(s.ids) for s in items])
    ranked = key_order(items, np.unique(ids[alive]), keys)
    rank = np.zeros(int(ids.max()) + 1, np.int64)
    rank[ranked] = np.arange(len(ranked))
    local = rank[ids]
    order = np.lexsort((start, local))
    dest = np.empty(len(ids), np.int64)
    dest[order] = np.cumsum(counts[order]) - counts[order]
    total = int(counts.sum())
    out = MetricSamples(ranked, take(total, np.uint32), take(total, np.int64), take(total, np.float64))
    jobs, first = [], 0
    for s in items:
        last = first + len(s.ids)
        jobs.append(Job(s, dest[first:last], local[first:last]))
        first = last
    return out, jobs


def key_order(items: Sequence[Scanned], present: np.ndarray, keys: Sequence[SeriesKey]) -> np.ndarray:
    """``present`` ids by label set. Prometheus answers with series in that order, so the
    order of the answer with the most series is taken when it holds them all and checks
    out (each key below the next), else they are sorted."""
    candidate = max(items, key=lambda s: len(s.ids)).ids
    candidate = candidate[np.isin(candidate, present)]
    order = candidate.tolist()
    if len(order) == len(present) and all(keys[a] < keys[b] for a, b in pairwise(order)):
        return candidate
    return np.array(sorted(present.tolist(), key=keys.__getitem__), np.int64)


def decode_placed(job: Job, out: MetricSamples) -> bool:
    """Decode ``job``'s response into ``out``; False when it does not decode exactly as counted."""
    from sources.prometheus import jit_values

    s = job.scanned
    slow = np.empty((max(1024, int(s.counts.sum()) // 64), 3), np.int64)
    status, _, n_slow, _ = jit_values.decode_lists(
        np.frombuffer(s.body, np.uint8),
        jit_values.words_of(s.body),
        s.starts,
        s.ends,
        s.request.ts_shift_ms,
        s.request.start_ms * 1000,
        s.request.end_ms * 1000,
        job.dest,
        s.counts,
        job.rank,
        out.ts_us,
        out.values,
        out.series_id,
        slow,
    )
    return status == jit_values.OK and jit_values.finish_slow(s.body, slow[:n_slow], out.values)
