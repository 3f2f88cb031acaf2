"""Read the GPUs' last XID error (dcgm-exporter's ``DCGM_FI_DEV_XID_ERRORS``) for one window.

A separate, narrow read beside the DCGM samples rather than a column of ``raw.dcgm_samples``:
at 100k GPUs a raw column would land one value per GPU and scrape (2.9 billion a day at 30 s)
that is 0 on nearly every GPU. Here the server filters: a ``query_range`` at the cluster's
sample step asks only for the points whose value is a critical XID (``contracts/xid.py``) or
cannot be an XID at all (NaN, negative, fractional: quarantined), so a day's answer holds the
few GPUs in trouble and nothing else. The server still evaluates every XID series at every
step, so the requests are sized from a listing of the series (``read_xid_prometheus``). A gap
in the answer is a value that is neither: 0 (no XID since the driver loaded) or an
informational XID, or no series (the dropout's business). The points are the step grid's, so
a change is seen to the step (the samples' own spacing).

From a file (``[clusters.metrics] source = "file"`` with an OpenMetrics ``.om`` path) the
metric's raw samples are read as they are (zeros included); a simulator Parquet directory has
no XID series. Either way the answer (``XidRead``) is ``XID_VALUES``, one row per GPU and point,
and the hosts that have an XID series at all: an empty answer reads like a fleet without errors,
so the caller compares them with the hosts that reported samples (an exporter not collecting
the field).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import polars as pl

from config.cluster import ClusterConfig
from contracts.xid import CRITICAL_XIDS
from sources.kube.reader import chunk_ms, keep_metrics, to_long
from sources.openmetrics import read_openmetrics
from sources.prometheus import LongSamples
from sources.prometheus.census import list_series
from sources.prometheus.client import PrometheusClient, PrometheusQueryError
from sources.prometheus.decode import DecodeError, Matrix, decode_matrix
from sources.prometheus.fetch import window_text
from sources.prometheus.promql import HOST_LABELS, seconds, selector
from sources.prometheus.source import to_ms

XID_METRIC = "DCGM_FI_DEV_XID_ERRORS"
GPU_LABEL = "gpu"
# hostname, the exporter's gpu label as written (checked in the transform), point time, value
XID_VALUES: dict[str, pl.DataType] = {
    "hostname": pl.String(),
    "gpu": pl.String(),
    "ts": pl.Datetime("us"),
    "value": pl.Float64(),
}
CHUNK_MS = 6 * 3600 * 1000  # a query_range of at most 6 h: under 11,000 points a series at steps of 2 s and more
MAX_SAMPLES = 50_000_000  # Prometheus' --query.max-samples default


@dataclass(frozen=True)
class XidRead:
    """The window's points worth reading (``XID_VALUES``) and the hosts with an XID series in it
    (None: the source cannot carry one, e.g. a simulator Parquet directory)."""

    values: pl.DataFrame
    hosts: frozenset[str] | None


def xid_query(base_selector: str) -> str:
    """PromQL of the points worth reading: a critical XID, or a value that is no XID."""
    metric = selector(XID_METRIC, base_selector, [])
    critical = " or ".join(f"{metric} == {code}" for code in sorted(CRITICAL_XIDS))
    return f"{critical} or {metric} != floor({metric}) or {metric} < 0"


def read_xid(cluster: ClusterConfig, start: datetime, end: datetime) -> XidRead:
    """``cluster``'s XID points in ``[start, end)`` from its Prometheus or its OpenMetrics file."""
    path = cluster.metrics.path
    if cluster.metrics.source == "file":
        if path is None or Path(path).is_dir():
            return XidRead(pl.DataFrame(schema=XID_VALUES), None)
        long = keep_metrics(read_openmetrics(path, start, end), [XID_METRIC])
        return XidRead(xid_values(long), frozenset(_hosts(long.series.to_dicts())))
    if cluster.prometheus is None:
        return XidRead(pl.DataFrame(schema=XID_VALUES), None)
    prom = cluster.prometheus
    client = PrometheusClient.from_config(prom)
    try:
        step = cluster.sample_step_seconds
        return read_xid_prometheus(client, prom.selector, step, start, end, prom.max_samples_per_query)
    finally:
        client.close()


def read_xid_prometheus(
    client: PrometheusClient,
    base_selector: str,
    step_seconds: int,
    start: datetime,
    end: datetime,
    max_samples: int = MAX_SAMPLES,
) -> XidRead:
    """The points of ``xid_query`` on the ``step_seconds`` grid of ``[start, end)``. The server
    evaluates every XID series at every step of a request, so a request spans at most
    ``max_samples / 2`` series x steps (the series counted by one listing, host by host when the
    server caps listings) and a refusal for its size is halved in time, down to one step."""
    start_ms, end_ms, step_ms = to_ms(start), to_ms(end), step_seconds * 1000
    window = window_text(start_ms, end_ms)
    label_sets = list_series(client, XID_METRIC, base_selector, start_ms, end_ms, window)[0]
    hosts = frozenset(_hosts(label_sets))
    if not label_sets:
        return XidRead(pl.DataFrame(schema=XID_VALUES), hosts)
    span = min(CHUNK_MS, chunk_ms(len(label_sets), step_ms, max_samples, end_ms - start_ms))
    chunks = [(a, min(a + span, end_ms)) for a in range(start_ms, end_ms, span)]
    query, matrices = xid_query(base_selector), []
    while chunks:
        a, b = chunks.pop()
        try:
            matrices.append(_chunk(client, query, a, b, step_ms))
        except PrometheusQueryError as exc:
            if not exc.too_many_samples or b - a <= step_ms:
                raise
            middle = a + ((b - a) // 2 // step_ms * step_ms or step_ms)
            chunks += [(middle, b), (a, middle)]
    return XidRead(xid_values(to_long(matrices)), hosts)


def _hosts(label_sets: list[dict]) -> set[str]:
    """The host (``Hostname``, else ``hostname``) of each series' labels, where it has one."""
    return {host for labels in label_sets if (host := next((labels[k] for k in HOST_LABELS if labels.get(k)), None))}


def _chunk(client: PrometheusClient, query: str, a: int, b: int, step_ms: int) -> Matrix:
    """The query's points on the step grid of ``[a, b)`` (``a`` on the grid)."""
    last = a + (b - a - 1) // step_ms * step_ms  # the last grid point in [a, b)
    params = {"query": query, "start": seconds(a), "end": seconds(last), "step": seconds(step_ms), "nocache": "1"}
    body = client.get("/api/v1/query_range", params, query=query, window=window_text(a, b))
    try:
        return decode_matrix(body).window(a, b)
    except DecodeError as exc:
        raise client.undecodable("/api/v1/query_range", query, window_text(a, b), exc) from exc


def xid_values(long: LongSamples) -> pl.DataFrame:
    """``XID_VALUES`` rows of the samples (host: ``Hostname``, else ``hostname``)."""
    if long.samples.is_empty():
        return pl.DataFrame(schema=XID_VALUES)
    hosts = [pl.col(label) for label in HOST_LABELS if label in long.series.columns]
    gpu = pl.col(GPU_LABEL) if GPU_LABEL in long.series.columns else pl.lit(None, pl.String)
    series = long.series.select("series_id", hostname=pl.coalesce(hosts) if hosts else pl.lit(None, pl.String), gpu=gpu)
    joined = long.samples.join(series, on="series_id")
    return joined.select(list(XID_VALUES)).cast(XID_VALUES)
