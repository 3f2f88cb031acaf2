"""Read kube-state-metrics (and Kueue / Volcano) series of one window into LongSamples.

From Prometheus: per metric, one ``/api/v1/series`` probe counts the series (namespace by
namespace when the server refuses to list that many: ``census.list_series``), then raw
range-selector reads (``metric{selector}[span]`` at the chunk end, as the DCGM reader
does) in time chunks small enough that one response stays under half of
``prometheus.max_samples_per_query``; a chunk the server still refuses for its size (its own
``--query.max-samples``) is halved in time, down to one scrape interval. Responses are decoded with
``sources.prometheus.decode`` and windowed to ``[start, end)``. From a file
(``kubernetes.path``): the OpenMetrics reader, keeping the metrics asked for.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

import numpy as np
import polars as pl

from config.cluster import ClusterConfig
from sources.kube.state_files import read_state
from sources.metrics import MetricsSourceError
from sources.prometheus import SAMPLES_SCHEMA, LongSamples
from sources.prometheus.census import list_series
from sources.prometheus.client import PrometheusClient, PrometheusQueryError
from sources.prometheus.decode import DecodeError, Matrix, decode_matrix
from sources.prometheus.fetch import window_text
from sources.prometheus.plan import seconds, selector
from sources.prometheus.source import to_ms


def metrics_to_read(cluster: ClusterConfig) -> list[str]:
    """Every metric name the cluster's ``[clusters.kubernetes]`` section asks for."""
    kube = cluster.kubernetes
    if kube is None:
        return []
    names = kube.pod_metrics() + kube.node_metrics()
    if kube.kueue.enabled:
        names += kube.kueue.metrics()
    if kube.volcano.enabled:
        names.append(kube.volcano.job_scheduling_duration)
    return names


def chunk_ms(n_series: int, interval_ms: int, max_samples: int, span_ms: int) -> int:
    """Longest chunk (a multiple of the interval) keeping n_series x points under max_samples / 2."""
    points = max(1, (max_samples // 2) // max(1, n_series))
    return max(interval_ms, min(span_ms, points * interval_ms))


class KubeReader:
    """``read(start, end) -> LongSamples`` for one cluster's Kubernetes series."""

    def __init__(self, cluster: ClusterConfig, client: PrometheusClient | None = None) -> None:
        if cluster.kubernetes is None:
            raise MetricsSourceError(f"cluster {cluster.name!r} has no [clusters.kubernetes] section")
        self.cluster, self.kube, self.metrics = cluster, cluster.kubernetes, metrics_to_read(cluster)
        self.client = client
        if client is None and self.kube.path is None and cluster.prometheus is not None:
            self.client = PrometheusClient.from_config(cluster.prometheus)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def read(self, start: datetime, end: datetime) -> LongSamples:
        if self.kube.path is not None:
            return keep_metrics(read_state(self.kube.path, start, end), self.metrics)
        matrices = [m for metric in self.metrics for m in self._read_metric(metric, to_ms(start), to_ms(end))]
        return to_long(matrices)

    def _read_metric(self, metric: str, start_ms: int, end_ms: int) -> list[Matrix]:
        assert self.client is not None and self.cluster.prometheus is not None
        prom = self.cluster.prometheus
        match = selector(metric, self.kube.selector, [])
        window = window_text(start_ms, end_ms)
        shard_by = ("node",) if metric in self.kube.node_metrics() else ("namespace",)
        label_sets, _ = list_series(
            self.client, metric, self.kube.selector, start_ms, end_ms, window, shard_labels=shard_by
        )  # by namespace (node series: by node) when the server caps listings
        n_series = len(label_sets)
        if n_series == 0:
            return []
        interval = prom.scrape_interval_seconds * 1000
        step = chunk_ms(n_series, interval, prom.max_samples_per_query, end_ms - start_ms)
        chunks = [(a, min(a + step, end_ms)) for a in range(start_ms, end_ms, step)]
        out = []
        while chunks:  # a chunk the server refuses for its size is halved in time, down to one interval
            a, b = chunks.pop()
            try:
                out.append(self._chunk(match, a, b))
            except PrometheusQueryError as exc:
                if not exc.too_many_samples:
                    raise
                if b - a <= interval:
                    exc.add_note(f"cardhours cannot make this request smaller: {b - a} ms is one scrape interval")
                    raise
                middle = a + (b - a) // 2
                chunks += [(middle, b), (a, middle)]
        return out

    def _chunk(self, match: str, a: int, b: int) -> Matrix:
        """The raw samples of ``match`` in ``[a, b)``."""
        query = f"{match}[{b - a + 1}ms]"
        body = self.client.get(
            "/api/v1/query", {"query": query, "time": seconds(b)}, query=query, window=window_text(a, b)
        )
        try:
            return decode_matrix(body).window(a, b)
        except DecodeError as exc:
            raise self.client.undecodable("/api/v1/query", query, window_text(a, b), exc) from exc


def to_long(matrices: Sequence[Matrix]) -> LongSamples:
    """Merge decoded chunks: one series_id per distinct label set, samples sorted."""
    ids: dict[str, int] = {}
    labels: list[dict[str, str]] = []
    parts = []
    for matrix in matrices:
        owner = np.empty(len(matrix.labels), np.uint32)
        for i, label_set in enumerate(matrix.labels):
            key = json.dumps(label_set, sort_keys=True)
            if key not in ids:
                ids[key] = len(labels)
                labels.append(label_set)
            owner[i] = ids[key]
        parts.append(
            pl.DataFrame(
                {
                    "series_id": np.repeat(owner, matrix.counts),
                    "ts": (matrix.ts_ms * 1000).astype("datetime64[us]"),
                    "value": matrix.values,
                },
                schema=SAMPLES_SCHEMA,
            )
        )
    if not labels:
        return LongSamples.empty()
    names = sorted({name for label_set in labels for name in label_set} - {"__name__"})
    series = pl.DataFrame(
        {
            "series_id": pl.Series(range(len(labels)), dtype=pl.UInt32),
            "__name__": [s.get("__name__") for s in labels],
            **{n: pl.Series([s.get(n) for s in labels], dtype=pl.String) for n in names},
        }
    )
    samples = pl.concat(parts).unique(["series_id", "ts"], keep="first").sort("series_id", "ts")
    return LongSamples(series, samples)


def keep_metrics(long: LongSamples, metrics: Sequence[str]) -> LongSamples:
    """Only the series of these metrics (an OpenMetrics file may hold others)."""
    series = long.series.filter(pl.col("__name__").is_in(list(metrics)))
    return LongSamples(series, long.samples.filter(pl.col("series_id").is_in(series["series_id"].implode())))
