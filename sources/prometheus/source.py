"""``PrometheusMetricsSource``: GPU samples of one cluster from a Prometheus HTTP API.

A read, per UTC day in the window: one ``/api/v1/series`` probe per metric (the census:
which series, on which hosts; metrics the site does not export have none and are skipped),
then the planned requests (``plan``), fetched in parallel and merged (``fetch``) into
``LongSamples``. ``read_samples`` normalizes labels and pivots to ``RAW_SAMPLE_SCHEMA`` by the
exporter's mapping (``contracts.exporters``: the cluster's ``[clusters.metrics] exporter``).
``read_shards`` does the same a shard of GPUs at a time (``shards``, ``sharded``): every
census first, then each shard's requests narrowed to its series.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta

import polars as pl

from config.cluster import DEFAULT_GPUS_PER_SHARD, ClusterConfig, PrometheusConfig
from config.urls import redact_url
from contracts.exporters import DCGM, Exporter, get_exporter
from contracts.signals import SIGNALS, signal
from sources.metrics import MetricsSourceError, conform_samples
from sources.prometheus import LongSamples
from sources.prometheus.boundary import probe_left_open
from sources.prometheus.census import list_series
from sources.prometheus.client import PrometheusClient
from sources.prometheus.concurrency import parallel_requests
from sources.prometheus.decode import DecodeError, decode_data
from sources.prometheus.decoders import Decoder, choose, validate
from sources.prometheus.energy import place_energy
from sources.prometheus.fetch import FetchStats, fetch_all, window_text
from sources.prometheus.gc_pause import gc_paused
from sources.prometheus.plan import (
    DAY_MS,
    TARGET_SAMPLES_PER_REQUEST,
    Census,
    Downsample,
    Limits,
    day_partitions,
    plan_metric,
)
from sources.prometheus.report import ReadReport
from sources.prometheus.sharded import read_in_shards
from sources.prometheus.shards import Partition, Selection, concat_long, tally
from sources.series_labels import normalize_series
from sources.series_pivot import pivot_samples

EPOCH = datetime(1970, 1, 1)

# Server-side downsampling: one aggregate per step and series, by the signal's ``reduce``
# (contracts.signals: gauges average, memory used keeps its peak and memory free its minimum).
# A counter (energy, mJ since boot) carries a raw reading per step, in the plain case the
# step's last one (what last_over_time gives). It is never aggregated on the server, though:
# where hpc_job changes inside a step, per-step readings cannot say which job used the
# energy, so the counter is read raw and placed on the step rows by energy.place_energy.
REDUCE_FUNCTIONS: dict[str, str] = {
    "avg": "avg_over_time",
    "max": "max_over_time",
    "min": "min_over_time",
    "last": "last_over_time",
}
READ_RAW_WHEN_DOWNSAMPLING = tuple(s.name for s in SIGNALS if s.kind == "counter")


def downsample_function(name: str) -> str:
    """The ``*_over_time`` function that summarizes the signal ``name`` per step (its ``reduce``)."""
    return REDUCE_FUNCTIONS[signal(name).reduce]


def to_ms(moment: datetime) -> int:
    """Naive UTC (or aware) datetime -> epoch milliseconds, rounded up (a sample at a whole
    millisecond is at or after ``moment`` exactly when it is at or after this)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return -((EPOCH - moment) // timedelta(milliseconds=1))


class PrometheusMetricsSource:
    """The ``MetricsSource`` over Prometheus; ``read_long`` for the label-preserving long form.
    ``decoder`` (``decoders``): ``auto`` (numba when ``cardhours[fast]`` is installed, else
    pyarrow), ``numba`` or ``pyarrow``; resolved at the first read."""

    def __init__(
        self,
        config: PrometheusConfig,
        client: PrometheusClient | None = None,
        target_samples_per_request: int = TARGET_SAMPLES_PER_REQUEST,
        exporter: Exporter = DCGM,
        decoder: Decoder = "auto",
    ) -> None:
        self.config = config
        self.decoder = validate(decoder)
        self.client = client if client is not None else PrometheusClient.from_config(config)
        self.parallel_requests = parallel_requests(config.max_parallel_requests, config.url)  # in flight
        self.target_samples_per_request = target_samples_per_request
        self.exporter = exporter.renamed(config.metric_names)  # as the server names the metrics
        self.signals = self.exporter.metric_signals  # metric -> signal
        # metric -> the exporter's own name for it
        self.fields = dict(zip(self.signals, exporter.metric_signals, strict=True))
        self.last_report: ReadReport | None = None
        self._left_open: bool | None = None

    @classmethod
    def from_config(cls, config: ClusterConfig | PrometheusConfig, **options: object) -> PrometheusMetricsSource:
        settings = config.prometheus if isinstance(config, ClusterConfig) else config
        if settings is None:
            raise MetricsSourceError(f"cluster {config.name!r} has no [clusters.prometheus] section")
        if isinstance(config, ClusterConfig):
            options = {"exporter": get_exporter(config.metrics.exporter), **options}
        return cls(settings, **options)  # type: ignore[arg-type]

    @property
    def fields_present(self) -> tuple[str, ...]:
        """The exporter's metrics that returned series in the last read (empty before any read)."""
        return self.last_report.fields_present if self.last_report else ()

    def read_samples(self, cluster: str, start: datetime, end: datetime) -> pl.DataFrame:
        return self.wide(self.read_long(start, end), cluster=cluster)

    def read_shards(
        self, cluster: str, start: datetime, end: datetime, gpus_per_shard: int = DEFAULT_GPUS_PER_SHARD
    ) -> Iterator[pl.DataFrame]:
        """The window's samples in shards of GPUs (``sources.prometheus.shards``), one read each;
        a shard's long samples are let go as soon as its rows are made."""
        return map(lambda shard: self.wide(*shard, cluster=cluster), self.read_long_shards(start, end, gpus_per_shard))

    def read_long_shards(
        self, start: datetime, end: datetime, gpus_per_shard: int = DEFAULT_GPUS_PER_SHARD
    ) -> Iterator[tuple[LongSamples, dict[str | None, bool] | None]]:
        """``read_long`` in shards of GPUs, with each shard's Kubernetes label decision (``sharded``)."""
        return read_in_shards(self, start, end, self.partitions(to_ms(start), to_ms(end)), gpus_per_shard)

    def wide(
        self, long: LongSamples, renamed_jobs: Mapping[str | None, bool] | None = None, *, cluster: str
    ) -> pl.DataFrame:
        """``long`` as ``RAW_SAMPLE_SCHEMA`` rows of ``cluster`` (``renamed_jobs``: normalize_series)."""
        try:
            normalized = normalize_series(long.series, self.exporter, renamed_jobs=renamed_jobs)
            wide = pivot_samples(normalized, long.samples, self.exporter.scales)
        except ValueError as exc:
            raise MetricsSourceError(self._cannot_normalize(exc)) from exc
        return conform_samples(wide, cluster).collect()

    def read_long(self, start: datetime, end: datetime, selections: Sequence[Selection] | None = None) -> LongSamples:
        """Raw samples in ``[start, end)``, or per-step aggregates when ``downsample_seconds`` is set;
        of the series ``selections`` select (one shard's: ``shards.ShardPlan``), else of all."""
        if self.config.downsample_seconds is not None:
            return self.read_downsampled(start, end, self.config.downsample_seconds, selections)
        return self.read_raw(start, end, selections)

    def read_raw(self, start: datetime, end: datetime, selections: Sequence[Selection] | None = None) -> LongSamples:
        """Every stored sample in ``[start, end)`` exactly once."""
        limits = self._limits(self.config.scrape_interval_seconds * 1000)
        return self._read(to_ms(start), to_ms(end), lambda metric: limits, lambda metric: None, selections)

    def read_downsampled(
        self, start: datetime, end: datetime, step_seconds: int, selections: Sequence[Selection] | None = None
    ) -> LongSamples:
        """One point per series and step bucket ``[b, b + step)``, stamped ``b`` (buckets from
        ``start``), aggregated on the server by :func:`downsample_function`; except the energy
        counter, read raw and placed on those rows exactly (``energy.place_energy``: where
        a bucket holds a job change or a counter reset, its rows are stamped with their last
        reading's time instead, and a series with readings on both sides of another one in the
        bucket gets an extra row with only its energy reading)."""
        step_ms = step_seconds * 1000
        if DAY_MS % step_ms or to_ms(start) % step_ms:
            raise ValueError(
                f"downsampling step {step_seconds} s must divide a day and {start} must be on a step "
                "boundary: a partial bucket at a day's end would be lost or counted twice"
            )
        left_open = self.left_open_ranges(to_ms(start), to_ms(end))
        stepped, raw = self._limits(step_ms), self._limits(self.config.scrape_interval_seconds * 1000)

        def downsample(metric: str) -> Downsample | None:
            name = self.signals[metric]
            return (
                None
                if name in READ_RAW_WHEN_DOWNSAMPLING
                else Downsample(step_ms, downsample_function(name), left_open)
            )

        long = self._read(
            to_ms(start),
            to_ms(end),
            lambda metric: raw if downsample(metric) is None else stepped,
            downsample,
            selections,
        )
        try:
            return place_energy(long, self.exporter, to_ms(start) * 1000, step_ms * 1000)
        except ValueError as exc:
            raise MetricsSourceError(self._cannot_normalize(exc)) from exc

    def _cannot_normalize(self, exc: ValueError) -> str:
        return f"cannot normalize {self.exporter.title} series read from {redact_url(self.client.url)}: {exc}"

    def left_open_ranges(self, start_ms: int | None = None, end_ms: int | None = None) -> bool:
        """Whether the server's range selectors are left-open, ``(t - r, t]`` (Prometheus 3,
        VictoriaMetrics), rather than ``[t - r, t]`` (Prometheus 2.x). Asked of the server with
        a sample in ``[start_ms, end_ms)`` (``boundary.probe_left_open``; the answer is kept);
        without one, from the build info's version (3 or later), 2.x when it does not say."""
        if self._left_open is None and start_ms is not None and end_ms is not None:
            for metric in self.fields:
                self._left_open = probe_left_open(self.client, metric, self.config.selector, start_ms, end_ms)
                if self._left_open is not None:
                    return self._left_open
        if self._left_open is not None:
            return self._left_open
        try:
            body = self.client.get("/api/v1/status/buildinfo", {}, query="(build info)", window="-")
            info = decode_data(body)
        except (MetricsSourceError, DecodeError):
            info = None
        major = str(info.get("version", "")).split(".")[0] if isinstance(info, dict) else ""
        return major.isdigit() and int(major) >= 3

    def _limits(self, interval_ms: int) -> Limits:
        return Limits(
            interval_ms,
            self.config.max_points_per_series,
            self.config.max_samples_per_query,
            self.target_samples_per_request,
        )

    def census(self, metric: str, start_ms: int, end_ms: int) -> Census:
        """The series of ``metric`` with samples in ``[start_ms, end_ms)``, counted per host
        (listed host by host when the server refuses to list them at once: ``census.py``)."""
        return self.survey(metric, start_ms, end_ms, tallied=False)[0]

    def survey(
        self, metric: str, start_ms: int, end_ms: int, tallied: bool = True
    ) -> tuple[Census, pl.DataFrame | None]:
        """The census of ``metric`` in ``[start_ms, end_ms)`` and, when ``tallied``, its series
        counted per device (``shards.tally``)."""
        label_sets, shards = list_series(
            self.client, metric, self.config.selector, start_ms, end_ms, window_text(start_ms, end_ms)
        )
        census = Census.from_label_sets(metric, label_sets, listed_in=shards)
        return census, tally(label_sets, self.exporter) if tallied else None

    def partitions(self, start_ms: int, end_ms: int) -> list[Partition]:
        """The read's (metric, day) partitions, metric by metric within a day."""
        return [(metric, a, b) for a, b in day_partitions(start_ms, end_ms) for metric in self.fields]

    def _read(
        self,
        start_ms: int,
        end_ms: int,
        limits: Callable[[str], Limits],
        downsample: Callable[[str], Downsample | None],
        selections: Sequence[Selection] | None = None,
    ) -> LongSamples:
        partitions = self.partitions(start_ms, end_ms)
        reads = []
        with gc_paused():
            for selection in selections or [Selection(self.config.selector)]:
                reads.append(
                    fetch_all(
                        self.client,
                        partitions,
                        probe=self.census if selection.censuses is None else selection.census,
                        selector=selection.selector,
                        plan=lambda census, a, b: plan_metric(
                            census, a, b, limits(census.metric), downsample(census.metric)
                        ),
                        max_parallel=self.parallel_requests,
                        decoder=choose(self.decoder),
                        min_span_ms=min(limits(metric).interval_ms for metric in self.fields),
                    )
                )
        long = concat_long([found for _, found, _ in reads])
        present = set(long.series.get_column("__name__").unique().to_list())
        self.last_report = ReadReport(
            fields_present=tuple(field for metric, field in self.fields.items() if metric in present),
            censuses=tuple(census for censuses, _, _ in reads for census in censuses),
            fetch=FetchStats.total([stats for _, _, stats in reads]),
            n_series=long.series.height,
            n_samples=long.samples.height,
        )
        return long
