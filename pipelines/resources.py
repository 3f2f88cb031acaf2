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
from cardhours.sources.sacct import overlapping_rows, parse_sacct_output, read_sacct_file, run_sacct, window_source
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
        as_json = slurm.sacct_output == "json"
        name = slurm.slurm_cluster or cluster
        output = run_sacct(slurm.sacct_command, start, end, name, json_output=as_json)
        source = window_source(start, end, name, json_output=as_json)
        raw, rejects = parse_sacct_output(output, source=source, cluster=cluster, day=day, has_header=False)
        return overlapping_rows(raw, start, end), rejects
