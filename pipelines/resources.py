"""Dagster resources: the validated config, the warehouse, and the per-cluster sources built from it.

The warehouse lock (warehouse/lock.py) guards the DuckDB file, which only runs with a monthly
asset open (the daily assets read and write the lake alone: pipelines/store.py). Such a run
takes it when Dagster sets the resource up, at the start of the run, and lets it go at the end
(the monthly job runs every step in that one process), so the run holds it for its whole
duration. A run of daily assets only never takes it: its steps run in parallel processes.
``warehouse()`` takes it too, re-entrantly: an asset materialized any other way still never
opens the warehouse unlocked. Inside ``cardhours run`` the runner already holds it; the run's
own acquisitions then only count up and down."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from functools import cached_property

import duckdb
import polars as pl
from dagster import ConfigurableResource, InitResourceContext
from pydantic import PrivateAttr

from config import Config, load_config
from pipelines.jobs import LAKE_ONLY
from pipelines.store import open_warehouse
from pipelines.tables import TABLES
from sources.metrics import FileMetricsSource, MetricsSource, MetricsSourceError
from sources.sacct import overlapping_rows, parse_sacct_output, read_sacct_file, run_sacct, window_source
from warehouse.lock import acquire_warehouse, hold_warehouse, release_warehouse


class CardhoursResource(ConfigurableResource):
    """Everything an asset needs, derived from one config file (path given at definition time)."""

    config_path: str
    _locked: bool = PrivateAttr(default=False)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        if context.run is None or _lake_only(context):
            return  # a schedule or sensor tick (no run), or a run of lake assets only: no lock
        acquire_warehouse(self.config.warehouse.path, _run_description(context))
        self._locked = True

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._locked:
            self._locked = False
            release_warehouse(self.config.warehouse.path)

    @cached_property
    def config(self) -> Config:
        return load_config(self.config_path)

    @contextmanager
    def warehouse(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection to the warehouse with all migrations applied and the lake attached
        (pipelines/store.py ``open_warehouse``); closed afterwards."""
        with hold_warehouse(self.config.warehouse.path, "a Dagster asset"):
            conn = open_warehouse(self.config)
            try:
                yield conn
            finally:
                conn.close()

    def metrics_source(self, cluster: str) -> MetricsSource:
        settings = self.config.cluster(cluster)
        if settings.metrics.source == "file":
            return FileMetricsSource.from_config(settings)
        if settings.prometheus is None:
            raise MetricsSourceError(f"cluster {cluster!r}: metrics.source = 'prometheus' needs [clusters.prometheus]")
        from sources.prometheus.source import PrometheusMetricsSource

        return PrometheusMetricsSource.from_config(settings)

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


def _lake_only(context: InitResourceContext) -> bool:
    """Whether the run materializes only lake assets (a daily job on any executor: its runs carry
    the ``LAKE_ONLY`` tag; or a selection of daily assets): it never opens the DuckDB file."""
    run = context.run
    if run is None:
        return False
    if run.asset_selection:
        return set(run.asset_selection) <= {table.key for table in TABLES if table.lake and table.group is not None}
    return LAKE_ONLY.items() <= run.tags.items()


def _run_description(context: InitResourceContext) -> str:
    """``dagster run 1a2b3c4d (monthly_review, partition 2026-10-01)``: who holds the lock."""
    run = context.run
    if run is None:
        return "a Dagster run"
    partition = run.tags.get("dagster/partition")
    return f"dagster run {run.run_id[:8]} ({run.job_name}{f', partition {partition}' if partition else ''})"
