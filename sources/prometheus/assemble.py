"""One read's answers -> LongSamples: merged chunks, or placed decoding where it applies.

With the pyarrow decoder every answer arrives decoded, as a :class:`chunks.Chunk`
(:func:`decode_chunk`), and a metric is merged once its last answer is in
(``merge.merge_metric``). With the numba decoder (``decoders``) answers in the compact
layout arrive as :class:`place.Scanned` (counted, not yet decoded); when a metric's last
answer is in (:meth:`Assembly.close`), a metric whose answers are all scanned gets its output
arrays and one decode job per answer, for the caller to run in parallel; each finished job
is reported back (:meth:`Assembly.job_done`). If any job did not decode exactly as counted,
or some answer of the metric came as a chunk, the metric's scanned answers are decoded into
chunks and the metric merged the pyarrow way: same result, slower.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from sources.prometheus import LongSamples
from sources.prometheus.chunks import Chunk, SeriesIndex, window_blocks
from sources.prometheus.decode import DecodeError, Matrix, decode_columns
from sources.prometheus.merge import Merger, MetricSamples
from sources.prometheus.place import Body, Scanned, decode_placed, place
from sources.prometheus.plan import Request
from sources.prometheus.scratch import Scratch, readable

Undecodable = Callable[[Request, DecodeError], Exception]  # the error to raise for an answer that does not decode


def decode_chunk(body: Body, request: Request, index: SeriesIndex, scratch: Scratch | None = None) -> Chunk:
    """One answer decoded the pyarrow way (timestamps in memory from ``scratch``; any other
    layout by ``json.loads``) and cut to its window (downsampled points moved to their bucket
    start). DecodeError when it cannot be."""
    columns = decode_columns(readable(body), request.ts_shift_ms, scratch)
    if isinstance(columns, Matrix):  # not the compact layout: the reference decoder's result
        series, counts, values = columns.labels, columns.counts, columns.values
        ts_us = (columns.ts_ms - request.ts_shift_ms) * 1000
    else:
        series, counts, ts_us, values = columns.texts, columns.counts, columns.ts_us, columns.values
    del columns
    ids = index.ids(request.metric, series)
    start_us, end_us = request.start_ms * 1000, request.end_ms * 1000
    blocks = window_blocks(ts_us, counts, start_us, end_us)
    if blocks is None:  # not in time order: keep the window's samples by copying them
        keep = (ts_us >= start_us) & (ts_us < end_us)
        owner = np.repeat(np.arange(len(counts)), counts)[keep]
        counts = np.bincount(owner, minlength=len(counts))
        ts_us, values = ts_us[keep], values[keep]
        blocks = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64), counts
    offsets, lengths = blocks
    return Chunk(request, ids, offsets, lengths.astype(np.int64), ts_us, values, len(body))


class Assembly:
    """The answers of one read, by metric, and the metrics assembled so far."""

    def __init__(self, undecodable: Undecodable | None = None, placed: bool = True) -> None:
        self.undecodable = undecodable
        self.placed = placed  # numba: answers are scanned and decoded into place, else decoded on arrival
        self.merger = Merger()
        self.index, self.scratch = self.merger.index, self.merger.scratch
        self._answers: dict[str, list[Scanned | Chunk]] = {}
        self._placed: dict[str, tuple[MetricSamples, int, bool]] = {}  # output, jobs left, all decoded
        self.fallbacks = 0  # metrics that went the pyarrow way although all answers were scanned

    def add(self, answer: Scanned | Chunk) -> None:
        self._answers.setdefault(answer.request.metric, []).append(answer)

    def close(self, metric: str) -> list[Callable[[], bool]]:
        """All of ``metric``'s answers are in: its decode jobs (none when it was merged right away)."""
        answers = self._answers.get(metric, [])
        if not answers or not all(isinstance(a, Scanned) for a in answers):
            self._merge(metric)
            return []
        placed = place(answers, self.index.keys, self.scratch.take)
        if placed is None:  # no sample in any window
            self.scratch.give(*(answer.body for answer in self._answers.pop(metric)))
            return []
        out, jobs = placed
        self._placed[metric] = (out, len(jobs), True)
        return [partial(decode_placed, job, out) for job in jobs]

    def job_done(self, metric: str, decoded: bool) -> None:
        out, left, ok = self._placed[metric]
        left, ok = left - 1, ok and decoded
        if left:
            self._placed[metric] = (out, left, ok)
            return
        del self._placed[metric]
        if ok:
            self.scratch.give(*(answer.body for answer in self._answers.pop(metric)))
            self.merger.put(metric, out)
        else:
            self.fallbacks += 1
            self.scratch.give(out.series_id, out.ts_us, out.values)
            self._merge(metric)

    def _merge(self, metric: str) -> None:
        for answer in self._answers.pop(metric, []):
            if isinstance(answer, Scanned):
                try:
                    chunk = decode_chunk(answer.body, answer.request, self.index, self.scratch)
                except DecodeError as exc:
                    if self.undecodable is None:
                        raise
                    raise self.undecodable(answer.request, exc) from exc
                self.scratch.give(answer.body)
                answer = chunk
            self.merger.add(answer)
        self.merger.close(metric)

    def result(self) -> LongSamples:
        if self._placed:
            raise RuntimeError(f"decode jobs still open for {sorted(self._placed)}")
        for metric in list(self._answers):
            self._merge(metric)
        return self.merger.result()
