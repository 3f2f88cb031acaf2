"""The blocking check of ``marts.fct_gpu_capacity_split``: on every row, the seconds of the
states (contracts/capacity_states.py) add up to the row's capacity, each state at least 0."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
from dagster import AssetCheckResult, AssetKey

from pipelines.checks.marts import SHOWN, TOLERANCE_GPU_SECONDS, _result
from transforms.marts.fct_gpu_capacity_split import STATE_COLUMNS

CAPACITY_STATES_BALANCE = "capacity_states_balance"


def capacity_states_balance_check(split: pl.DataFrame, asset_key: AssetKey | Sequence[str]) -> AssetCheckResult:
    """Rows whose states do not sum to capacity (to TOLERANCE_GPU_SECONDS), or with a negative state."""
    columns = list(STATE_COLUMNS.values())
    off = pl.sum_horizontal(columns) - pl.col("capacity_seconds")
    bad = split.filter((off.abs() > TOLERANCE_GPU_SECONDS) | (pl.min_horizontal(columns) < -TOLERANCE_GPU_SECONDS))
    failures = [
        f"cluster {r['cluster']!r} host {r['hostname']!r} GPU {r['gpu']}"
        + (f" instance {r['gpu_i_id']}" if r["gpu_i_id"] is not None else "")
        + f" hour {r['hour']}: states "
        + ", ".join(f"{name} {r[name]:.3f}" for name in columns)
        + f"; capacity {r['capacity_seconds']:.3f} GPU-seconds: a state below 0 or a sum that differs "
        "(allocated beyond capacity: see the allocation_within_capacity check of marts/fct_gpu_hourly)"
        for r in bad.head(SHOWN).iter_rows(named=True)
    ]
    if bad.height > SHOWN:
        failures.append(f"... {bad.height} rows in all")
    return _result(asset_key, CAPACITY_STATES_BALANCE, failures, {"rows": split.height, "rows_unbalanced": bad.height})
