"""What one answered request becomes before merging: series ids and blocks of samples.

The decoding thread decodes each response as it arrives into the columns it will be merged
from: series ids from a read-wide :class:`SeriesIndex` (a label set's JSON text is parsed
once per read, not once per chunk), timestamps as int64 microseconds, values as float64,
and per series one block ``(offset, length)`` of the samples inside the request's window
(samples are not copied to cut the window: a range selector's extra edge samples are only
trimmed off the blocks; that needs each series' samples in time order, which is checked,
and a chunk where they are not is cut by copying: :func:`window_blocks`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from sources.prometheus.decode import DecodeError, parse_labels
from sources.prometheus.plan import Request

SeriesKey = tuple[str, ...]  # (metric name, then each label's name and value, in label-name order)


class SeriesIndex:
    """The label sets of one read, each with an id in first-seen order; shared by the worker
    threads. A label set's JSON text (Prometheus writes a series' labels the same way in every
    answer) is parsed once per read; and since a GPU's series of different metrics differ only
    in ``__name__``, a text is parsed without its ``"__name__":"<metric>",`` member, once for
    all metrics (a text written otherwise is parsed whole).

    Keys order series as Prometheus does (by label name, then value, label after label); they
    are flat tuples, one object per series, so a read of many series leaves the garbage
    collector little to walk."""

    def __init__(self) -> None:
        self.keys: list[SeriesKey] = []
        self.labels: list[dict[str, str]] = []
        self._by_key: dict[SeriesKey, int] = {}
        self._by_text: dict[str, dict[bytes, int]] = {}
        self._rests: dict[
            bytes, tuple[dict[str, str], SeriesKey, SeriesKey]
        ] = {}  # text less __name__ -> labels, key halves
        self._lock = threading.Lock()

    def ids(self, metric: str, series: Sequence[bytes] | Sequence[Mapping[str, str]]) -> np.ndarray:
        """Ids of ``series`` (``"metric"`` JSON texts, or parsed label sets) read for ``metric``.
        A series without ``__name__`` (aggregations drop it) is named ``metric``; one named
        otherwise is an answer to another question: DecodeError."""
        with self._lock:
            known = self._by_text.setdefault(metric, {})
        texts = [one for one in series if isinstance(one, bytes)]
        new = [text for text in dict.fromkeys(texts) if text not in known]
        if new:
            self._learn(metric, new, known)
        if len(texts) == len(series):
            return np.fromiter((known[text] for text in texts), np.int64, len(texts))
        ids = np.empty(len(series), np.int64)
        for i, one in enumerate(series):
            ids[i] = known[one] if isinstance(one, bytes) else self._register(metric, one)
        return ids

    def _learn(self, metric: str, texts: list[bytes], known: dict[bytes, int]) -> None:
        """Ids of label-set texts not seen before for ``metric`` into ``known``."""
        member = b'"__name__":' + json.dumps(metric).encode() + b","
        rests = {text: rest for text in texts if len(rest := text.replace(member, b"", 1)) < len(text)}
        unparsed = [rest for rest in dict.fromkeys(rests.values()) if rest not in self._rests]
        for rest, labels in zip(unparsed, _parse_all(unparsed), strict=True):
            flat = tuple(chain.from_iterable(sorted(labels.items())))
            cut = next((i for i in range(0, len(flat), 2) if flat[i] > "__name__"), len(flat))
            self._rests[rest] = labels, flat[:cut], flat[cut:]
        whole = [text for text in texts if text not in rests or "__name__" in self._rests[rests[text]][0]]
        parsed = dict(
            zip(whole, _parse_all(whole), strict=True)
        )  # written otherwise, or a second __name__: parsed whole
        for text in texts:  # ids in first-seen order
            if text in parsed:
                known[text] = self._register(metric, parsed[text])
            else:
                labels, before, after = self._rests[rests[text]]
                known[text] = self._insert(
                    (metric, *before, "__name__", metric, *after), lambda labels=labels: {"__name__": metric, **labels}
                )

    def _register(self, metric: str, labels: Mapping[str, str]) -> int:
        """The id of ``labels`` (kept as given: callers hand over label sets they do not change)."""
        name = labels.get("__name__")
        if name is None:
            labels = {"__name__": metric, **labels}
        elif name != metric:
            raise DecodeError(f"asked for {metric}, the answer has a series of {name}")
        return self._insert((metric, *chain.from_iterable(sorted(labels.items()))), lambda: labels)

    def _insert(self, key: SeriesKey, labels: Callable[[], Mapping[str, str]]) -> int:
        """The id of ``key``; a new one (label set ``labels()``) when it is not known yet."""
        with self._lock:
            found = self._by_key.get(key)
            if found is None:
                found = self._by_key[key] = len(self.keys)
                self.keys.append(key)
                self.labels.append(labels())  # type: ignore[arg-type]
        return found


def _parse_all(texts: list[bytes]) -> list[dict[str, str]]:
    """Label sets of ``"metric"`` JSON texts: one ``json.loads`` for all of them (a third of
    the time of one call each); each text on its own when that fails, to name the bad one."""
    if not texts:
        return []
    try:
        label_sets = json.loads(b"[" + b",".join(texts) + b"]")
    except ValueError:
        label_sets = None
    if (
        not isinstance(label_sets, list)
        or len(label_sets) != len(texts)
        or {type(x) for x in label_sets} != {dict}
        or not {type(v) for labels in label_sets for v in labels.values()} <= {str}
    ):
        try:
            return [parse_labels(text) for text in texts]
        except ValueError as exc:
            raise DecodeError(str(exc)) from exc
    return label_sets


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
        pieces = [slice(o, o + n) for o, n in zip(self.offsets.tolist(), self.lengths.tolist(), strict=True) if n]
        if not pieces:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        return (np.concatenate([self.ts_us[p] for p in pieces]), np.concatenate([self.values[p] for p in pieces]))


def window_blocks(
    ts_us: np.ndarray, counts: np.ndarray, start_us: int, end_us: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """(offset, length) per series (``counts[i]`` samples each, series after series) of its
    samples in ``[start_us, end_us)``; None when a series' timestamps do not increase (then the
    samples outside the window are not a prefix and a suffix of its block, and only a copy can
    cut the window). The edges are trimmed a sample at a time: a range selector's answer holds
    at most one sample before its window and one at its end."""
    counts = np.asarray(counts, np.int64)
    ends = np.cumsum(counts)
    offsets = ends - counts
    if len(ts_us) > 1:
        increasing = ts_us[1:] > ts_us[:-1]
        joins = ends[:-1]  # first sample of the next series: its pair with the sample before is not compared
        joins = joins[(joins > 0) & (joins < len(ts_us))]
        increasing[joins - 1] = True
        if not increasing.all():
            return None
    lo, hi = offsets.copy(), ends.copy()
    edge = np.flatnonzero(lo < hi)
    while edge.size:
        edge = edge[ts_us[lo[edge]] < start_us]
        lo[edge] += 1
        edge = edge[lo[edge] < hi[edge]]
    edge = np.flatnonzero(lo < hi)
    while edge.size:
        edge = edge[ts_us[hi[edge] - 1] >= end_us]
        hi[edge] -= 1
        edge = edge[lo[edge] < hi[edge]]
    return lo, hi - lo
