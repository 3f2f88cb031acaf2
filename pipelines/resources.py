"""Dagster resources: the validated config, the warehouse, and the per-cluster sources built from it."""

from __future__ import annotations

from contextlib import contextmanager
from collections.abc import Iterator
from datetime import date, datetime
from functools import cached_property

import duckdb
import polars as pl
from dagster import ConfigurableResource

from cardhours.config import Config, load_config
from cardhours.sources.metrics import FileMetricsSource, MetricsSource, MetricsSourceError
from cardhours.sources.sacct import read_sacct_file, run_sacct, parse_sacct_text, overlapping_rows
from warehouse import connect


class CardhoursResource(ConfigurableResource):
    """Everything an asset needs, derived from one config file (path given at definition time)."""

    config_path: str

    @cached_property
    def config(self) -> Config:
        return load_config(self.config_path)

    @contextmanager
    def warehouse(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection to the warehouse with all migrations applied; closed afterwards."""
        conn = connect(self.config.warehouse.path)
        try:
            yield conn
        finally:
            conn.close()

    def metrics_source(self, cluster: str) -> MetricsSource:
        settings = self.config.cluster(cluster)
        if settings.metrics.source == "file":
            return FileMetricsSource(settings.metrics.path)
        if settings.prometheus is None:
            raise MetricsSourceError(f"cluster {cluster!r}: metrics.source = 'prometheus' needs [clusters.prometheus]")
        from pipelines.prometheus_resource import PrometheusResource

        return PrometheusResource.from_config(settings.prometheus).source()

    def sacct_rows(self, cluster: str, day: date, start: datetime, end: datetime) -> tuple[pl.DataFrame, pl.DataFrame]:
        """Raw sacct rows for the window and the lines quarantined while reading them."""
        slurm = self.config.cluster(cluster).slurm
        if slurm is None:
            raise ValueError(f"cluster {cluster!r} has no [clusters.slurm] section")
        if slurm.sacct_file is not None:
            return read_sacct_file(slurm.sacct_file, cluster=cluster, day=day, start=start, end=end)
        text = run_sacct(slurm.sacct_command, start, end, slurm.slurm_cluster or cluster)
        raw, rejects = parse_sacct_text(text, source="sacct", cluster=cluster, day=day, has_header=False)
        return overlapping_rows(raw, start, end), rejects
