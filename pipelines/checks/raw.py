"""Blocking data checks on the raw tables, one day partition at a time, run as SQL in DuckDB."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from typing import TYPE_CHECKING

import great_expectations as gx
from dagster import AssetCheckResult, AssetKey

from pipelines.checks.gx_adapter import run_suite_on_duckdb
from pipelines.checks.suites import raw_dcgm_samples_suite, raw_slurm_sacct_suite

if TYPE_CHECKING:
    from pipelines.store import Store

RAW_SUITES: dict[str, Callable[[], gx.ExpectationSuite]] = {
    "raw.dcgm_samples": raw_dcgm_samples_suite,
    "raw.slurm_sacct": raw_slurm_sacct_suite,
}


def check_raw_table(
    store: Store, table: str, asset_key: Sequence[str], check_name: str, day: date, landed: Sequence[str]
) -> AssetCheckResult:
    """Validate one day of a raw table with its suite, on the store's connection. ``landed``: the
    clusters whose day landed rows; with none (no cluster has the source, or every one's day is
    a coverage gap) there is nothing to check, and the check passes saying so."""
    if not landed:
        return AssetCheckResult(
            passed=True,
            asset_key=AssetKey(list(asset_key)),
            check_name=check_name,
            description=f"nothing to check: no cluster landed rows of {table} for day={day.isoformat()} "
            "(no cluster reads this source, or each one's day is a coverage gap: meta.landings)",
            metadata={"evaluated_rows": 0},
        )
    suite = RAW_SUITES[table]()
    return run_suite_on_duckdb(
        suite, store.database, table, asset_key, check_name, where_day=day, connection=store.conn
    )
