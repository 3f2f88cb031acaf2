"""Blocking checks on marts.mart_chargeback_reconciliation: pure frame -> AssetCheckResult.

Each fails when a cluster's row of the month has its flag false; the description names the
cluster and the numbers (transforms/marts/mart_chargeback_reconciliation.py says what is compared).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from typing import Any

import polars as pl
from dagster import AssetCheckResult, AssetCheckSeverity, AssetKey

CAPACITY = "chargeback_capacity_balance"
COST = "chargeback_cost_to_the_cent"
DEPARTMENTS = "chargeback_departments_match_jobs"
JOBS = "chargeback_jobs_in_one_row"
SHOWN = 10


def _capacity(r: dict[str, Any]) -> str:
    return (
        f"charged {r['charged_gpu_hours']} + idle {r['idle_gpu_hours']} GPU-hours != capacity {r['capacity_gpu_hours']}"
    )


def _cost(r: dict[str, Any]) -> str:
    return (
        f"{r['misrounded_rows']} rows not quantity x unit price to the cent, {r['unpriced_rows']} rows without a price"
    )


def _departments(r: dict[str, Any]) -> str:
    return (
        f"{r['departments_mismatched']} department periods differ from the job detail; "
        f"usage cost {r['usage_cost']} vs job detail {r['job_detail_cost']}"
    )


def _jobs(r: dict[str, Any]) -> str:
    return (
        f"{r['jobs_mismatched']} of {r['jobs_with_gpu_hours']} runs not exactly in the detail, "
        f"{r['duplicate_lines']} duplicate lines; charged {r['charged_gpu_hours']} vs "
        f"fct_job_usage {r['job_usage_gpu_hours']} GPU-hours"
    )


CHECKS: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    CAPACITY: ("capacity_balanced", _capacity),
    COST: ("cost_balanced", _cost),
    DEPARTMENTS: ("departments_balanced", _departments),
    JOBS: ("jobs_balanced", _jobs),
}


def reconciliation_checks(
    reconciliation: pl.DataFrame, month: date, asset_key: AssetKey | Sequence[str]
) -> list[AssetCheckResult]:
    """One result per check in CHECKS over the month's rows."""
    key = asset_key if isinstance(asset_key, AssetKey) else AssetKey(list(asset_key))
    rows = reconciliation.filter(pl.col("month") == month).sort("cluster")
    results = []
    for name, (flag, explain) in CHECKS.items():
        failures = [f"cluster {r['cluster']!r}: {explain(r)}" for r in rows.iter_rows(named=True) if not r[flag]]
        if rows.is_empty():
            failures = [f"no reconciliation rows for {month:%Y-%m}"]
        results.append(
            AssetCheckResult(
                passed=not failures,
                asset_key=key,
                check_name=name,
                severity=AssetCheckSeverity.ERROR,
                description="; ".join(failures[:SHOWN]) if failures else None,
                metadata={"month": str(month), "clusters": rows.height, "failures": len(failures)},
            )
        )
    return results
