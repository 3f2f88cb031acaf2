"""What a plan is made of: the server's limits, downsampling, host shards, the series census and
one request (a metric over a time chunk, as the query text and HTTP parameters it sends)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sources.prometheus.promql import HOST_LABELS, host_shard_matchers, seconds, selector

TARGET_SAMPLES_PER_REQUEST = 2_000_000  # ~50 MB of JSON: decodes in well under a second
MIN_CHUNK_MS = 3_600_000


class PlanError(ValueError):
    """No smaller request can be made."""


@dataclass(frozen=True)
class Limits:
    interval_ms: int  # raw sample spacing (scrape interval), or the downsampling step
    max_points_per_series: int
    max_samples_per_query: int
    target_samples_per_request: int = TARGET_SAMPLES_PER_REQUEST
    min_chunk_ms: int = MIN_CHUNK_MS


@dataclass(frozen=True)
class Downsample:
    """Server-side aggregation per step: ``function(metric[step])`` by ``query_range``."""

    step_ms: int
    function: str  # avg_over_time, max_over_time, min_over_time, last_over_time
    left_open: bool  # range selectors are (t - r, t] (Prometheus >= 3) rather than [t - r, t]


@dataclass(frozen=True)
class HostShard:
    """Series whose host label ``label`` is one of ``hosts``; ``label=None``: neither host label."""

    label: str | None
    hosts: tuple[str, ...]

    def matchers(self) -> list[str]:
        return host_shard_matchers(self.label, self.hosts)


def census_host(labels: Mapping[str, str]) -> tuple[str | None, str]:
    """The host a census counts a series under: its first host label that is set and the
    value, ``(None, "")`` without one."""
    for name in HOST_LABELS:
        host = labels.get(name)
        if host:
            return name, host
    return None, ""


@dataclass(frozen=True)
class Census:
    """Series of one metric in one partition, per host: ``(label, host, n_series)`` sorted."""

    metric: str
    groups: tuple[tuple[str | None, str, int], ...]
    listed_in: int = field(default=0, compare=False)  # host shards the listing took (census.py); 0: one

    @classmethod
    def from_label_sets(cls, metric: str, label_sets: Iterable[Mapping[str, str]], listed_in: int = 0) -> Census:
        counts: dict[tuple[str | None, str], int] = {}
        for labels in label_sets:
            key = census_host(labels)
            counts[key] = counts.get(key, 0) + 1
        return cls.from_counts(metric, counts, listed_in)

    @classmethod
    def from_counts(cls, metric: str, counts: Mapping[tuple[str | None, str], int], listed_in: int = 0) -> Census:
        """From series counted per ``(host label, host)`` (``census_host``)."""
        order = {name: i for i, name in enumerate((*HOST_LABELS, None))}
        keys = sorted(counts, key=lambda k: (order[k[0]], k[1]))
        return cls(metric, tuple((label, host, counts[(label, host)]) for label, host in keys), listed_in)

    @property
    def total(self) -> int:
        return sum(n for _, _, n in self.groups)

    def series_in(self, shard: HostShard | None) -> int:
        if shard is None:
            return self.total
        hosts = set(shard.hosts)
        return sum(n for label, host, n in self.groups if label == shard.label and (label is None or host in hosts))

    def shards(self) -> list[tuple[str | None, list[tuple[str, int]]]]:
        """Hosts and their series counts per host label, in census order."""
        out: dict[str | None, list[tuple[str, int]]] = {}
        for label, host, n in self.groups:
            out.setdefault(label, []).append((host, n))
        return list(out.items())


@dataclass(frozen=True)
class Request:
    metric: str
    start_ms: int
    end_ms: int
    series: int  # estimated from the census
    shard: HostShard | None = None
    downsample: Downsample | None = None
    splits: int = 0  # how many refusals led to this request

    def query(self, base_selector: str) -> str:
        text = selector(self.metric, base_selector, self.shard.matchers() if self.shard else [])
        if self.downsample is None:
            return f"{text}[{self.end_ms - self.start_ms + 1}ms]"
        step = self.downsample.step_ms
        return f"{self.downsample.function}({text}[{step if self.downsample.left_open else step - 1}ms])"

    def http(self, base_selector: str) -> tuple[str, dict[str, str]]:
        """(API path, parameters): an instant query at the chunk end, or a range query whose
        evaluation at ``b + step - 1 ms`` aggregates exactly the bucket ``[b, b + step)``."""
        query = self.query(base_selector)
        if self.downsample is None:
            return "/api/v1/query", {"query": query, "time": seconds(self.end_ms)}
        step = self.downsample.step_ms
        # nocache=1: VictoriaMetrics otherwise moves start and end to multiples of the step (for its
        # response cache), evaluating other buckets; Prometheus and the others ignore it
        return "/api/v1/query_range", {
            "query": query,
            "start": seconds(self.start_ms + step - 1),
            "end": seconds(self.end_ms - 1),
            "step": seconds(step),
            "nocache": "1",
        }

    @property
    def ts_shift_ms(self) -> int:
        """Subtract from returned timestamps: downsampled points are stamped with their bucket start."""
        return 0 if self.downsample is None else self.downsample.step_ms - 1
