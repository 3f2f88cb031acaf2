"""The three timed reads of ``cardhours bench ingest``, each run in a fresh process.

Each function runs in its own spawned interpreter (``measure``), so its peak RSS is its
own and no read profits from another's warm Python caches. Each first reads the window's
first five minutes untimed (imports, first-call paths); timing starts after that and the
set-up and ends when the data is in memory:

- ``ours``: ``PrometheusMetricsSource.read_long_shards`` as the ingest asset reads a day
  (census probes, then per shard of GPUs the planned requests in parallel, decoded into
  LongSamples; a day of no more than ``DEFAULT_GPUS_PER_SHARD`` GPUs is one shard) with the
  decoder asked for (``decoders``: ``auto`` takes numba when ``cardhours[fast]`` is
  installed); the result names the one that ran.
- ``raw``: the same HTTP requests (the census probes, then ``plan_metric`` per partition,
  exactly what ``read_long`` sends when nothing is refused) with the same concurrency and
  the same ``PrometheusClient`` session; bodies are read the way ``read_long`` reads them
  (data answers into reused buffers, ``body.read_into``) and discarded, nothing is parsed.
  The request list is built before the clock starts.
- ``client``: prometheus-api-client's ``get_metric_range_data`` per metric over the window,
  then ``MetricRangeDataFrame`` of each result (the library's own DataFrame path).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from config.cluster import DEFAULT_GPUS_PER_SHARD

WARM_UP = timedelta(minutes=5)  # each timer first reads this much, untimed (imports, first calls)


def server_pid(url: str) -> int | None:
    """The pid of the process listening on ``url``'s port on this machine (Linux ``/proc``),
    or None when it cannot be told (another OS, a remote server, no permission)."""
    port = urlsplit(url).port
    if port is None:
        return None
    try:
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            if os.path.exists(table):
                for line in open(table).readlines()[1:]:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # LISTEN
                        inodes.add(f"socket:[{fields[9]}]")
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if any(os.readlink(f"/proc/{pid}/fd/{fd}") in inodes for fd in os.listdir(f"/proc/{pid}/fd")):
                    return int(pid)
            except OSError:
                continue
    except (OSError, ValueError, IndexError):
        return None
    return None


def _process_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (``/proc/<pid>/stat``)."""
    if pid is None:
        return None
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_busy_seconds() -> float:
    """CPU seconds all processes of the machine have spent busy (``/proc/stat``)."""
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class Clock:
    """Wall time, this process's CPU time (also split into user and system time: first-touch
    page faults of new memory count as system time), the Prometheus server's own CPU time
    (``server_cpu_s``, from ``/proc/<pid>/stat``; None when its process is not found) and the
    rest of the machine's CPU time (the server, plus any other load) between ``start`` and
    ``stop``."""

    def __init__(self, server: int | None = None) -> None:
        self.server = server

    def start(self) -> Clock:
        self.server_cpu = _process_seconds(self.server)
        self.times = os.times()
        self.wall, self.cpu, self.busy = time.perf_counter(), time.process_time(), _machine_busy_seconds()
        return self

    def stop(self) -> dict:
        cpu = time.process_time() - self.cpu
        wall, busy, times = time.perf_counter() - self.wall, _machine_busy_seconds(), os.times()
        server = _process_seconds(self.server)
        return {
            "seconds": wall,
            "cpu_s": cpu,
            "user_s": times.user - self.times.user,
            "sys_s": times.system - self.times.system,
            "other_cpu_s": max(busy - self.busy - cpu, 0.0),
            "server_cpu_s": None if server is None or self.server_cpu is None else server - self.server_cpu,
        }


def _rss_mib() -> float:
    """Peak resident memory of this process so far (``VmHWM``: unlike ``ru_maxrss`` it starts
    afresh at exec, so it does not count the parent image a spawned child was forked from)."""
    status = open("/proc/self/status").read()
    return int(re.search(r"^VmHWM:\s+(\d+) kB", status, re.M).group(1)) / 1024


def _source(config: dict, decoder: str = "auto"):
    from config.cluster import PrometheusConfig
    from sources.prometheus import PrometheusMetricsSource

    return PrometheusMetricsSource(PrometheusConfig.model_validate(config), decoder=decoder)


def _read_shards(source, start: datetime, end: datetime, gpus_per_shard: int) -> tuple[int, int]:
    """(samples, series) of the window read as the ingest asset reads it: in shards of GPUs
    (``read_long_shards``; one shard for a day of at most ``gpus_per_shard`` GPUs)."""
    samples = series = 0
    for long, _ in source.read_long_shards(start, end, gpus_per_shard):
        samples, series = samples + long.samples.height, series + long.series.height
    return samples, series


def _timed_read(
    config: dict, start: datetime, end: datetime, warm_until: datetime, decoder: str, gpus_per_shard: int
) -> dict:
    """An untimed read of ``[start, warm_until)``, then the timed read of ``[start, end)``."""
    source = _source(config, decoder)
    _read_shards(source, start, warm_until, gpus_per_shard)
    base = _rss_mib()
    clock = Clock(server_pid(config["url"])).start()
    samples, series = _read_shards(source, start, end, gpus_per_shard)
    timing = clock.stop()
    stats = source.last_report.fetch
    return {
        **timing,
        "samples": samples,
        "series": series,
        "requests": stats.answered + len(source.last_report.censuses),
        "refused": stats.refused,
        "mib": stats.n_bytes / 2**20,
        "rss_mib": _rss_mib(),
        "base_rss_mib": base,
        "in_flight": source.parallel_requests,
        "decoder": stats.decoder,
        "fallbacks": stats.fallbacks,
        "gpu_shards": source.last_report.gpu_shards,
    }


def ours(
    config: dict, start: datetime, end: datetime, decoder: str = "auto", gpus_per_shard: int = DEFAULT_GPUS_PER_SHARD
) -> dict:
    """cardhours' ingest in a fresh process; the untimed warm-up only loads imports and first-call paths."""
    return _timed_read(config, start, end, start + WARM_UP, decoder, gpus_per_shard)


def ours_warm(
    config: dict, start: datetime, end: datetime, decoder: str = "auto", gpus_per_shard: int = DEFAULT_GPUS_PER_SHARD
) -> dict:
    """``ours`` once more in the same process after an untimed read of the whole window: what a
    long-running reader pays per read once its memory pool holds the pages a read needs
    (``ours`` in a fresh process also pays for first touching them)."""
    return _timed_read(config, start, end, end, decoder, gpus_per_shard)


def request_list(
    source, start: datetime, end: datetime, gpus_per_shard: int = DEFAULT_GPUS_PER_SHARD
) -> list[tuple[str, dict[str, str]]]:
    """The census probes and the planned data requests of ``source.read_long_shards(start, end)``
    (raw reads): each shard's, selection by selection."""
    from sources.prometheus.plan import plan_metric, seconds, selector
    from sources.prometheus.sharded import plan_shards
    from sources.prometheus.source import to_ms

    limits = source._limits(source.config.scrape_interval_seconds * 1000)
    partitions = source.partitions(to_ms(start), to_ms(end))
    probes = [
        (
            "/api/v1/series",
            {"match[]": selector(metric, source.config.selector, []), "start": seconds(a), "end": seconds(b - 1)},
        )
        for metric, a, b in partitions
    ]
    plan, data = plan_shards(source, partitions, gpus_per_shard), []
    for shard in plan.shards:
        for selection in plan.selections(shard):
            for metric, a, b in partitions:
                requests = plan_metric(selection.census(metric, a, b), a, b, limits)
                data += [r.http(selection.selector) for r in requests]
    return probes + data


def raw(config: dict, start: datetime, end: datetime, gpus_per_shard: int = DEFAULT_GPUS_PER_SHARD) -> dict:
    from sources.prometheus.scratch import Scratch

    source = _source(config)
    requests = request_list(source, start, end, gpus_per_shard)
    client = source.client
    base = _rss_mib()
    warm_up = request_list(source, start, start + WARM_UP, gpus_per_shard)
    scratch = Scratch()

    def fetch(request: tuple[str, dict[str, str]]) -> int:
        path, params = request
        into = scratch if path != "/api/v1/series" else None  # as read_long: census probes as bytes
        body = client.get(path, params, query=params.get("query", path), window="bench", into=into)
        scratch.give(body)
        return len(body)

    with ThreadPoolExecutor(max_workers=source.parallel_requests) as pool:
        list(pool.map(fetch, warm_up))
    clock = Clock(server_pid(config["url"])).start()
    with ThreadPoolExecutor(max_workers=source.parallel_requests) as pool:
        n_bytes = sum(pool.map(fetch, requests))
    timing = clock.stop()
    return {
        **timing,
        "samples": None,
        "series": None,
        "requests": len(requests),
        "refused": 0,
        "mib": n_bytes / 2**20,
        "rss_mib": _rss_mib(),
        "base_rss_mib": base,
        "in_flight": source.parallel_requests,
    }


def client(config: dict, start: datetime, end: datetime) -> dict:
    from prometheus_api_client import MetricRangeDataFrame, PrometheusConnect

    from contracts.exporters import DCGM

    connection = PrometheusConnect(url=config["url"], disable_ssl=not config.get("verify_tls", True))
    metrics = list(DCGM.renamed(config.get("metric_names", {})).metric_signals)
    utc_start, utc_end = start.replace(tzinfo=UTC), end.replace(tzinfo=UTC)
    MetricRangeDataFrame(
        connection.get_metric_range_data(metrics[0], start_time=utc_start, end_time=utc_start + WARM_UP)
    )  # untimed
    base = _rss_mib()
    clock = Clock(server_pid(config["url"])).start()
    samples = series = 0
    for metric in metrics:
        result = connection.get_metric_range_data(metric, start_time=utc_start, end_time=utc_end)
        if result:
            samples += len(MetricRangeDataFrame(result))
            series += len(result)
    timing = clock.stop()
    return {
        **timing,
        "samples": samples,
        "series": series,
        "requests": len(metrics),
        "refused": 0,
        "mib": None,
        "rss_mib": _rss_mib(),
        "base_rss_mib": base,
        "in_flight": 1,
    }


TIMERS = {"ours": ours, "raw": raw, "client": client, "ours_warm": ours_warm}
DECODING = ("ours", "ours_warm")  # the timers that take a decoder
SHARDED = ("ours", "ours_warm", "raw")  # the timers that read (or fetch) in shards of GPUs


def measure(
    name: str,
    config: dict,
    start: datetime,
    end: datetime,
    decoder: str = "auto",
    gpus_per_shard: int = DEFAULT_GPUS_PER_SHARD,
) -> dict:
    """Run timer ``name`` in a fresh spawned process (cardhours' reads with ``decoder``, in shards
    of at most ``gpus_per_shard`` GPUs); its result dict."""
    context = multiprocessing.get_context("spawn")
    options = {"decoder": decoder} if name in DECODING else {}
    options |= {"gpus_per_shard": gpus_per_shard} if name in SHARDED else {}
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(TIMERS[name], config, start, end, **options).result()
