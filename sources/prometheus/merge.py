"""Answered chunks -> LongSamples, one metric at a time.

Merging is per metric and starts as soon as a metric's last request is answered, while
the other metrics are still being fetched, so only the last metric's merge and a
zero-copy concatenation remain after the last response. ``series_id`` is the rank of the
label set over the whole read, ordered by metric name and then by the label set as
Prometheus orders series, so a series read in several chunks keeps one id and the output
(sorted by ``series_id, ts``) does not depend on which request finished first. Within a
metric, chunks are disjoint in time or in series, so ordering blocks by ``(series_id,
chunk start)`` is a full sort; runs of blocks already adjacent in one chunk are copied at
once, into arrays from the read's :class:`scratch.Scratch` (the merged chunks' own buffers
go back to it). The samples frame holds one Arrow chunk per metric.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sources.prometheus import SAMPLES_SCHEMA, LongSamples
from sources.prometheus.chunks import Chunk, SeriesIndex, SeriesKey
from sources.prometheus.csv_values import pooled
from sources.prometheus.scratch import Scratch

Take = Callable[[int, type[np.generic]], np.ndarray]  # (items, dtype) -> an uninitialized array


@dataclass(frozen=True)
class MetricSamples:
    """One metric's samples in output order; ``series_id`` still counts from 0 within the metric."""

    ids: np.ndarray  # SeriesIndex ids in rank order
    series_id: np.ndarray  # uint32 per sample
    ts_us: np.ndarray
    values: np.ndarray


class Merger:
    """Chunks in, LongSamples out: ``add`` each answered chunk, ``close`` a metric once all of
    its chunks are in (merges it, then gives the chunks' arrays back to ``scratch``, the
    read's memory, for the chunks and merges still to come), ``result`` at the end."""

    def __init__(self, index: SeriesIndex | None = None, scratch: Scratch | None = None) -> None:
        self.index = SeriesIndex() if index is None else index
        self.scratch = Scratch() if scratch is None else scratch
        self._open: dict[str, list[Chunk]] = {}
        self._merged: dict[str, MetricSamples] = {}
        self._labels: dict[str, pl.DataFrame] = {}  # per stored metric: its series' label columns

    def add(self, chunk: Chunk) -> None:
        self._open.setdefault(chunk.request.metric, []).append(chunk)

    def close(self, metric: str) -> None:
        chunks = self._open.pop(metric, [])
        if metric in self._merged:
            raise RuntimeError(f"metric {metric} merged twice")
        merged = merge_metric(chunks, self.index.keys, self.scratch.take)
        # merge_metric copied every sample into new arrays, or kept a chunk's own: the others go back
        kept = () if merged is None else (merged.ts_us, merged.values)
        self.scratch.give(
            *(array for chunk in chunks for array in (chunk.ts_us, chunk.values) if not any(array is k for k in kept))
        )
        if merged is not None:
            self._keep(metric, merged)

    def put(self, metric: str, samples: MetricSamples) -> None:
        """``metric``'s samples, already in output order (placed decoding)."""
        if metric in self._merged or metric in self._open:
            raise RuntimeError(f"metric {metric} merged twice")
        self._keep(metric, samples)

    def _keep(self, metric: str, samples: MetricSamples) -> None:
        """Store a finished metric with its label columns (built now, while other metrics are
        still being fetched, rather than after the last answer)."""
        labels = self.index.labels
        self._merged[metric] = samples
        self._labels[metric] = _label_frame([labels[i] for i in samples.ids.tolist()])

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
            frames.append(
                pl.DataFrame(
                    {
                        "series_id": part.series_id,
                        "ts": pl.Series(part.ts_us).cast(pl.Datetime("us")),
                        "value": part.values,
                    },
                    schema=SAMPLES_SCHEMA,
                )
            )
        label_frames = [self._labels.pop(metric) for metric in sorted(self._labels)]
        series = pl.concat(label_frames, how="diagonal") if len(label_frames) > 1 else label_frames[0]
        names = sorted(set(series.columns) - {"__name__"})
        series = series.select(pl.Series("series_id", np.arange(n_series, dtype=np.uint32)), "__name__", *names)
        return LongSamples(series, pl.concat(frames, rechunk=False))


def merge_metric(chunks: list[Chunk], keys: Sequence[SeriesKey], take: Take = pooled) -> MetricSamples | None:
    """One metric's chunks in output order: series by label set, then samples by time; new
    arrays from ``take``."""
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
    ts, values = _gather(chunks, which, offset, length, take)
    return MetricSamples(ranked, np.repeat(local[blocks].astype(np.uint32), length), ts, values)


def _whole(chunks: list[Chunk], offset: np.ndarray, length: np.ndarray) -> Chunk | None:
    """The chunk whose arrays already hold the blocks in order with nothing else (one chunk,
    series in output order, no sample trimmed off), else None."""
    if len(chunks) != 1 or not len(offset) or offset[0] != 0:
        return None
    chunk = chunks[0]
    if int(length.sum()) != len(chunk.ts_us) or not (offset[1:] == offset[:-1] + length[:-1]).all():
        return None
    return chunk


def _label_frame(label_sets: list[dict[str, str]]) -> pl.DataFrame:
    """One String column per label name of ``label_sets`` (``__name__`` first), built column by
    column (twice as fast as ``pl.from_dicts``)."""
    names = ["__name__", *sorted({name for labels in label_sets for name in labels} - {"__name__"})]
    return pl.DataFrame(
        {name: [labels.get(name) for labels in label_sets] for name in names}, schema=dict.fromkeys(names, pl.String)
    )


def _gather(
    chunks: list[Chunk], which: np.ndarray, offset: np.ndarray, length: np.ndarray, take: Take = pooled
) -> tuple[np.ndarray, np.ndarray]:
    """Blocks (chunk, offset, length) copied in order into new arrays; adjacent blocks of one
    chunk as one run."""
    whole = _whole(chunks, offset, length)
    if whole is not None:  # nothing to reorder or cut: the chunk's arrays are the output (made contiguous)
        if whole.values.flags.c_contiguous:
            return whole.ts_us, whole.values
        values = take(len(whole.values), np.float64)
        np.copyto(values, whole.values)
        return whole.ts_us, values
    new_run = np.ones(len(which), bool)
    new_run[1:] = (which[1:] != which[:-1]) | (offset[1:] != offset[:-1] + length[:-1])
    starts = np.flatnonzero(new_run)
    sizes = np.add.reduceat(length, starts) if len(starts) else starts
    runs = zip(which[starts].tolist(), offset[starts].tolist(), (offset[starts] + sizes).tolist(), strict=True)
    ts_pieces, value_pieces = [], []
    for w, lo, hi in runs:
        chunk = chunks[w]
        ts_pieces.append(chunk.ts_us[lo:hi])
        value_pieces.append(chunk.values[lo:hi])
    total = int(length.sum())
    ts, values = take(total, np.int64), take(total, np.float64)
    np.concatenate(ts_pieces, out=ts)
    np.concatenate(value_pieces, out=values)
    return ts, values
