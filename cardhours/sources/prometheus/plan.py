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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

DAY_MS = 86_400_000
HOST_LABELS = ("Hostname", "hostname")  # released exporters, newer exporters
TARGET_SAMPLES_PER_REQUEST = 2_000_000  # ~50 MB of JSON: decodes in well under a second
MIN_CHUNK_MS = 3_600_000
_REGEX_META = set("\\.+*?()|[]{}^$")  # Go's regexp.QuoteMeta set (RE2 rejects escaped letters/spaces)


def promql_string(value: str) -> str:
    """A double-quoted PromQL string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def quote_meta(value: str) -> str:
    """A regular expression matching ``value`` literally."""
    return "".join("\\" + c if c in _REGEX_META else c for c in value)


def selector(metric: str, base_selector: str, extra: list[str]) -> str:
    """``metric{<base matchers>,<extra matchers>}`` (``base_selector`` is ``{...}`` or empty)."""
    inner = base_selector.strip().removeprefix("{").removesuffix("}").strip().rstrip(",")
    matchers = [m for m in (inner, *extra) if m]
    return f"{metric}{{{','.join(matchers)}}}" if matchers else metric


def host_shard_matchers(label: str | None, hosts: tuple[str, ...]) -> list[str]:
    """Matchers of one host shard: a regex over ``label``; ``hostname`` shards exclude series that
    carry ``Hostname`` (those belong to the ``Hostname`` shards); ``None``: neither label."""
    if label is None:
        return [f'{name}=""' for name in HOST_LABELS]
    others = [f'{name}=""' for name in HOST_LABELS[: HOST_LABELS.index(label)]]
    return [*others, f"{label}=~{promql_string('|'.join(quote_meta(h) for h in hosts))}"]


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


@dataclass(frozen=True)
class Census:
    """Series of one metric in one partition, per host: ``(label, host, n_series)`` sorted."""

    metric: str
    groups: tuple[tuple[str | None, str, int], ...]

    @classmethod
    def from_label_sets(cls, metric: str, label_sets: Iterable[Mapping[str, str]]) -> Census:
        counts: dict[tuple[str | None, str], int] = {}
        for labels in label_sets:
            label = next((name for name in HOST_LABELS if labels.get(name)), None)
            key = (label, labels[label] if label else "")
            counts[key] = counts.get(key, 0) + 1
        order = {name: i for i, name in enumerate((*HOST_LABELS, None))}
        keys = sorted(counts, key=lambda k: (order[k[0]], k[1]))
        return cls(metric, tuple((label, host, counts[(label, host)]) for label, host in keys))

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
        return "/api/v1/query_range", {"query": query, "start": seconds(self.start_ms + step - 1),
                                       "end": seconds(self.end_ms - 1), "step": seconds(step)}

    @property
    def ts_shift_ms(self) -> int:
        """Subtract from returned timestamps: downsampled points are stamped with their bucket start."""
        return 0 if self.downsample is None else self.downsample.step_ms - 1


def seconds(ms: int) -> str:
    """Milliseconds as the API's decimal seconds, exact."""
    sign, ms = ("-", -ms) if ms < 0 else ("", ms)
    return f"{sign}{ms // 1000}.{ms % 1000:03d}"


def day_partitions(start_ms: int, end_ms: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut at UTC midnights."""
    cuts = range((start_ms // DAY_MS + 1) * DAY_MS, end_ms, DAY_MS)
    bounds = [start_ms, *cuts, end_ms]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if a < b]


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
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if a < b]


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


def plan_metric(census: Census, start_ms: int, end_ms: int, limits: Limits,
                downsample: Downsample | None = None) -> list[Request]:
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
        raise PlanError(f"cannot split {request.metric} [{request.start_ms}, {request.end_ms}) any further "
                        f"(one host, {span} ms)")
    step = request.downsample.step_ms if request.downsample else 1
    middle = request.start_ms + (span // step // 2) * step
    if middle <= request.start_ms:
        raise PlanError(f"cannot halve {request.metric} [{request.start_ms}, {request.end_ms}) on {step} ms steps")
    return [replace(request, start_ms=a, end_ms=b, splits=request.splits + 1)
            for a, b in ((request.start_ms, middle), (middle, request.end_ms))]
