"""Blocking data checks on the raw tables, one day partition at a time, run as SQL in DuckDB."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from typing import TYPE_CHECKING

import great_expectations as gx
from dagster import AssetCheckResult

from pipelines.checks.gx_adapter import run_suite_on_duckdb
from pipelines.checks.suites import raw_dcgm_samples_suite, raw_slurm_sacct_suite

if TYPE_CHECKING:
    from pipelines.store import Store

RAW_SUITES: dict[str, Callable[[], gx.ExpectationSuite]] = {
    "raw.dcgm_samples": raw_dcgm_samples_suite,
    "raw.slurm_sacct": raw_slurm_sacct_suite,
}


def check_raw_table(store: Store, table: str, asset_key: Sequence[str], check_name: str, day: date) -> AssetCheckResult:
    """Validate one day of a raw table with its suite, on the store's connection."""
    suite = RAW_SUITES[table]()
    return run_suite_on_duckdb(
        suite, store.database, table, asset_key, check_name, where_day=day, connection=store.conn
    )
