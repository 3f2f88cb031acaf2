"""Blocking asset checks on the marts: pure functions from frames to ``AssetCheckResult``.

They read and write nothing; the assets pass what they already hold.

- ``capacity_balance``: per cluster and month, the department rows plus the unallocated row
  of ``marts.mart_department_monthly`` equal capacity GPUs x hours of the month, exactly
  (to TOLERANCE_GPU_HOURS), and the unallocated row is not negative (jobs never held more
  than the inventory has).
- ``matches_job_usage``: per cluster, the department rows' GPU-hours and job counts equal
  those of ``marts.fct_job_usage`` for the month.
- ``allocation_within_capacity``: per cluster and hour of ``marts.fct_gpu_hourly``,
  allocated GPU-seconds never exceed capacity GPU-seconds (each row, and the hour's sum).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

import polars as pl
from dagster import AssetCheckResult, AssetCheckSeverity, AssetKey

TOLERANCE_GPU_HOURS = 1e-6
TOLERANCE_GPU_SECONDS = TOLERANCE_GPU_HOURS * 3600
SHOWN = 10  # failing groups listed in a description / metadata

CAPACITY_BALANCE = "capacity_balance"
MATCHES_JOB_USAGE = "matches_job_usage"
WITHIN_CAPACITY = "allocation_within_capacity"


def _result(
    asset_key: AssetKey | Sequence[str], name: str, failures: list[str], metadata: dict[str, Any]
) -> AssetCheckResult:
    return AssetCheckResult(
        passed=not failures,
        asset_key=asset_key if isinstance(asset_key, AssetKey) else AssetKey(list(asset_key)),
        check_name=name,
        severity=AssetCheckSeverity.ERROR,
        description="; ".join(failures[:SHOWN]) if failures else None,
        metadata={**metadata, "failures": len(failures)},
    )


def capacity_balance_check(
    departments: pl.DataFrame, capacity: pl.DataFrame, month: date, asset_key: AssetKey | Sequence[str]
) -> AssetCheckResult:
    """``departments``: mart_department_monthly rows; ``capacity``: (cluster, capacity_gpu_hours)."""
    rows = departments.filter(pl.col("month") == month)
    totals = rows.group_by("cluster").agg(
        pl.col("gpu_hours").filter(~pl.col("is_unallocated")).sum().alias("allocated"),
        pl.col("gpu_hours").filter(pl.col("is_unallocated")).sum().alias("unallocated"),
        pl.col("is_unallocated").sum().alias("unallocated_rows"),
    )
    joined = capacity.select("cluster", "capacity_gpu_hours").join(totals, on="cluster", how="full", coalesce=True)
    failures = []
    for row in joined.sort("cluster").iter_rows(named=True):
        cluster, expected = row["cluster"], row["capacity_gpu_hours"]
        allocated, unallocated = row["allocated"] or 0.0, row["unallocated"] or 0.0
        if expected is None:
            failures.append(
                f"cluster {cluster!r}: {allocated:.6f} GPU-hours allocated but no capacity in the inventory"
            )
        elif row["unallocated_rows"] != 1:
            failures.append(f"cluster {cluster!r}: {row['unallocated_rows'] or 0} unallocated rows, expected 1")
        elif abs(allocated + unallocated - expected) > TOLERANCE_GPU_HOURS:
            failures.append(
                f"cluster {cluster!r}: allocated {allocated:.6f} + unallocated {unallocated:.6f} "
                f"!= capacity {expected:.6f} GPU-hours"
            )
        elif unallocated < -TOLERANCE_GPU_HOURS:
            failures.append(
                f"cluster {cluster!r}: jobs held {allocated:.6f} GPU-hours, over the capacity of {expected:.6f}"
            )
    metadata = {"month": str(month), "clusters": joined.height}
    return _result(asset_key, CAPACITY_BALANCE, failures, metadata)


def matches_job_usage_check(
    departments: pl.DataFrame, job_usage: pl.DataFrame, month: date, asset_key: AssetKey | Sequence[str]
) -> AssetCheckResult:
    """Department GPU-hours and job counts per cluster equal fct_job_usage's for ``month``."""
    mart = (
        departments.filter((pl.col("month") == month) & ~pl.col("is_unallocated"))
        .group_by("cluster")
        .agg(pl.col("gpu_hours").sum().alias("mart_gpu_hours"), pl.col("job_count").sum().alias("mart_jobs"))
    )
    jobs = (
        job_usage.filter(pl.col("month") == month)
        .group_by("cluster")
        .agg(pl.col("gpu_hours").fill_null(0.0).sum().alias("job_gpu_hours"), pl.len().alias("jobs"))
    )
    joined = jobs.join(mart, on="cluster", how="full", coalesce=True).fill_null(0)
    failures = [
        f"cluster {r['cluster']!r}: departments {r['mart_gpu_hours']:.6f} GPU-hours in {r['mart_jobs']} runs, "
        f"fct_job_usage {r['job_gpu_hours']:.6f} in {r['jobs']}"
        for r in joined.sort("cluster").iter_rows(named=True)
        if abs(r["mart_gpu_hours"] - r["job_gpu_hours"]) > TOLERANCE_GPU_HOURS or r["mart_jobs"] != r["jobs"]
    ]
    metadata = {"month": str(month), "job_gpu_hours": float(joined["job_gpu_hours"].sum())}
    return _result(asset_key, MATCHES_JOB_USAGE, failures, metadata)


def allocation_within_capacity_check(hourly: pl.DataFrame, asset_key: AssetKey | Sequence[str]) -> AssetCheckResult:
    """``hourly``: fct_gpu_hourly rows with cluster, hour, allocated_seconds, capacity_seconds."""
    over = pl.col("allocated_seconds").fill_null(0) - pl.col("capacity_seconds").fill_null(0) > TOLERANCE_GPU_SECONDS
    bad_rows = hourly.filter(over).height
    per_hour = hourly.group_by("cluster", "hour").agg(pl.col("allocated_seconds", "capacity_seconds").sum())
    bad_hours = per_hour.filter(over).sort("cluster", "hour")
    failures = [
        f"cluster {r['cluster']!r} hour {r['hour']}: {r['allocated_seconds']:.3f} GPU-seconds allocated, "
        f"capacity {r['capacity_seconds']:.3f}"
        for r in bad_hours.head(SHOWN).iter_rows(named=True)
    ]
    if bad_rows and not failures:
        failures.append(f"{bad_rows} rows allocate more seconds than their GPU has")
    elif failures and bad_hours.height > SHOWN:
        failures.append(f"... {bad_hours.height} hours in all")
    metadata = {"hours": per_hour.height, "hours_over_capacity": bad_hours.height, "rows_over_capacity": bad_rows}
    return _result(asset_key, WITHIN_CAPACITY, failures, metadata)
