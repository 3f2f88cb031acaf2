"""Reading dcgm-exporter series from a Prometheus HTTP API (docs/design.md, "Prometheus ingest").

``plan`` sizes the requests (pure), ``client`` does the HTTP with retries, ``decode`` turns
response bytes into columns, ``fetch`` runs the requests in parallel and merges them into
:class:`LongSamples`, ``shards``/``sharded`` read a day in shards of GPUs, ``source`` is the
``MetricsSource`` over all of it.

``LongSamples`` lives here (and the rest is imported lazily) so that readers producing the
same shape, such as ``sources.openmetrics``, need not import the HTTP stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

import polars as pl

__all__ = [
    "LongSamples",
    "SERIES_KEY_SCHEMA",
    "SAMPLES_SCHEMA",
    "PrometheusClient",
    "PrometheusQueryError",
    "PrometheusMetricsSource",
    "ReadReport",
]

SERIES_KEY_SCHEMA: dict[str, pl.DataType] = {"series_id": pl.UInt32(), "__name__": pl.String()}
SAMPLES_SCHEMA: dict[str, pl.DataType] = {"series_id": pl.UInt32(), "ts": pl.Datetime("us"), "value": pl.Float64()}


@dataclass(frozen=True)
class LongSamples:
    """Series (``series_id``, ``__name__``, one String column per label name as spelled on the
    server) and their raw samples (``series_id, ts, value``, sorted by ``series_id, ts``)."""

    series: pl.DataFrame
    samples: pl.DataFrame

    @classmethod
    def empty(cls) -> LongSamples:
        return cls(pl.DataFrame(schema=SERIES_KEY_SCHEMA), pl.DataFrame(schema=SAMPLES_SCHEMA))


_LAZY = {
    "PrometheusClient": "sources.prometheus.client",
    "PrometheusQueryError": "sources.prometheus.client",
    "PrometheusMetricsSource": "sources.prometheus.source",
    "ReadReport": "sources.prometheus.report",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
