"""Where GPU samples come from: one interface, several backends.

Every backend returns the samples of one cluster in ``[start, end)`` as a frame in
``RAW_SAMPLE_SCHEMA`` (docs/design.md): wide, one row per GPU-or-MIG-instance x
``hpc_job`` x timestamp, a field the site does not export as a null column.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import polars as pl

from config.cluster import DEFAULT_GPUS_PER_SHARD, ClusterConfig
from contracts.exporters import DCGM, Exporter, get_exporter
from contracts.schemas import RAW_SAMPLE_SCHEMA
from sources.shards import DEVICE_LABELS, WHOLE, Shard, devices, pack

if TYPE_CHECKING:
    from sources.prometheus import LongSamples

__all__ = ["MetricsSource", "FileMetricsSource", "MetricsSourceError", "conform_samples"]

OPENMETRICS_SUFFIXES = (".om", ".txt")


class MetricsSourceError(RuntimeError):
    """The metrics source could not deliver the samples asked for."""


class MetricsSource(Protocol):
    """Reads the GPU samples of one cluster for a half-open time window."""

    def read_samples(self, cluster: str, start: datetime, end: datetime) -> pl.DataFrame:
        """Samples with ``start <= ts < end`` in ``RAW_SAMPLE_SCHEMA`` order."""
        ...

    def read_shards(self, cluster: str, start: datetime, end: datetime, gpus_per_shard: int) -> Iterator[pl.DataFrame]:
        """The same samples in frames of at most ``gpus_per_shard`` GPUs each (sources.shards:
        a GPU's rows are all in one frame), read one after the other as the caller takes them."""
        ...


def conform_samples(frame: pl.DataFrame | pl.LazyFrame, cluster: str) -> pl.LazyFrame:
    """Cast to ``RAW_SAMPLE_SCHEMA``: missing columns become nulls, extra columns are an error.

    ``day`` is derived from ``ts`` and ``cluster`` is set, so a backend need not produce them.
    """
    lazy = frame.lazy()
    names = lazy.collect_schema().names()
    unknown = sorted(set(names) - set(RAW_SAMPLE_SCHEMA))
    if unknown:
        raise MetricsSourceError(f"unexpected sample columns {unknown}; known: {list(RAW_SAMPLE_SCHEMA)}")
    columns = []
    for name, dtype in RAW_SAMPLE_SCHEMA.items():
        if name == "cluster":
            columns.append(pl.lit(cluster, dtype=dtype).alias(name))
        elif name == "day":
            columns.append(pl.col("ts").cast(pl.Datetime("us")).dt.date().alias(name))
        elif name in names:
            columns.append(pl.col(name).cast(dtype).alias(name))
        else:
            columns.append(pl.lit(None, dtype=dtype).alias(name))
    return lazy.select(columns)


class FileMetricsSource:
    """Samples from files: a directory of day-partitioned Parquet as the simulator writes it,
    or one OpenMetrics text file (``.om``/``.txt``, an exporter's series as promtool takes them).

    Layout: ``<path>/metrics/day=YYYY-MM-DD/*.parquet`` or ``<path>/day=YYYY-MM-DD/*.parquet``
    (``path`` may point at the simulator's output directory or at its ``metrics`` folder).
    Only the day directories that overlap the window are opened.

    An OpenMetrics file is read with ``sources.openmetrics`` and labels are
    normalized as for Prometheus (``normalize_series`` -> ``pivot_samples``) by the
    ``exporter``'s mapping (default dcgm-exporter), whose metrics are the ones taken from
    it; other metric families in the file are not GPU samples and are left out.
    """

    def __init__(self, path: str | Path, exporter: Exporter = DCGM) -> None:
        self.path = Path(path)
        self.exporter = exporter

    @classmethod
    def from_config(cls, config: ClusterConfig) -> FileMetricsSource:
        """The cluster's ``[clusters.metrics]`` file source, read by its ``exporter``'s mapping."""
        if config.metrics.path is None:
            raise MetricsSourceError(f"cluster {config.name!r}: metrics.source = 'file' needs metrics.path")
        return cls(config.metrics.path, get_exporter(config.metrics.exporter))

    def _root(self) -> Path:
        if (self.path / "metrics").is_dir():
            return self.path / "metrics"
        if self.path.is_dir():
            return self.path
        raise MetricsSourceError(f"metrics path {self.path} is not a directory of day=YYYY-MM-DD Parquet partitions")

    def _files(self, start: datetime, end: datetime) -> list[Path]:
        root = self._root()
        files: list[Path] = []
        for day_dir in sorted(root.glob("day=*")):
            day_text = day_dir.name.removeprefix("day=")
            try:
                day = datetime.fromisoformat(day_text)
            except ValueError as exc:
                raise MetricsSourceError(f"bad partition directory name {day_dir}") from exc
            if day < end and day + timedelta(days=1) > start:
                files.extend(sorted(day_dir.glob("*.parquet")))
        return files

    def _openmetrics(self, cluster: str, start: datetime, end: datetime, gpus_per_shard: int | None):
        from sources.openmetrics import OpenMetricsError, read_openmetrics
        from sources.series_labels import normalize_series

        try:
            long = read_openmetrics(self.path, start, end)
            series = long.series.filter(pl.col("__name__").is_in(list(self.exporter.metric_signals)))
            normalized = normalize_series(series, self.exporter)
            for shard in self._plan(normalized, gpus_per_shard):
                yield self._pivot(long, shard.of(normalized), cluster)
        except (OpenMetricsError, ValueError) as exc:
            raise MetricsSourceError(f"cannot read {self.exporter.title} samples from {self.path}: {exc}") from exc

    def _pivot(self, long: LongSamples, normalized: pl.DataFrame, cluster: str) -> pl.DataFrame:
        """The wide rows of the ``normalized`` series' samples in ``long``."""
        from sources.series_pivot import pivot_samples

        samples = long.samples.join(normalized.select("series_id"), on="series_id", how="semi")
        return conform_samples(pivot_samples(normalized, samples, self.exporter.scales), cluster).collect()

    def _scan(self, cluster: str, start: datetime, end: datetime) -> pl.LazyFrame | None:
        """The window's samples of ``cluster`` in the Parquet files (None: no file)."""
        files = self._files(start, end)
        if not files:
            return None
        scan = pl.scan_parquet(files, hive_partitioning=False)
        if "cluster" in scan.collect_schema().names():
            scan = scan.filter(pl.col("cluster") == cluster)
        scan = scan.drop([c for c in ("cluster", "day") if c in scan.collect_schema().names()])
        return scan.filter((pl.col("ts") >= start) & (pl.col("ts") < end))

    def _parquet(self, cluster: str, start: datetime, end: datetime, gpus_per_shard: int | None):
        try:
            scan = self._scan(cluster, start, end)
            if scan is None:
                yield pl.DataFrame(schema=RAW_SAMPLE_SCHEMA)
                return
            for shard in self._plan(conform_samples(scan, cluster).select(DEVICE_LABELS), gpus_per_shard):
                yield conform_samples(shard.of(scan), cluster).collect()
        except (pl.exceptions.PolarsError, OSError) as exc:
            where = _unreadable(self._files(start, end)) or self.path
            raise MetricsSourceError(
                f"cannot read {self.exporter.title} samples from {where}: {str(exc).splitlines()[0]}; "
                "replace or remove that file, then rerun the day"
            ) from exc

    @staticmethod
    def _plan(labels: pl.DataFrame | pl.LazyFrame, gpus_per_shard: int | None) -> list[Shard]:
        return [WHOLE] if gpus_per_shard is None else pack(devices(labels.select(DEVICE_LABELS)), gpus_per_shard)

    def _shards(
        self, cluster: str, start: datetime, end: datetime, gpus_per_shard: int | None
    ) -> Iterator[pl.DataFrame]:
        if self.path.is_file() and self.path.suffix in OPENMETRICS_SUFFIXES:
            return self._openmetrics(cluster, start, end, gpus_per_shard)
        return self._parquet(cluster, start, end, gpus_per_shard)

    def read_samples(self, cluster: str, start: datetime, end: datetime) -> pl.DataFrame:
        return next(self._shards(cluster, start, end, None))

    def read_shards(
        self, cluster: str, start: datetime, end: datetime, gpus_per_shard: int = DEFAULT_GPUS_PER_SHARD
    ) -> Iterator[pl.DataFrame]:
        return self._shards(cluster, start, end, gpus_per_shard)


def _unreadable(files: list[Path]) -> Path | None:
    """The first of ``files`` whose Parquet footer cannot be read (a truncated or foreign file)."""
    for path in files:
        try:
            pl.read_parquet_schema(path)
        except (pl.exceptions.PolarsError, OSError):
            return path
    return None
