"""The columns the review reads (the subsets in reports/columns.py) against the marts that feed them.

Reports do not import the transforms, so each subset is checked here against the SCHEMA
constant of its mart (pipelines/assets/reports.py READS): a renamed or retyped mart column
fails this test instead of a review build.
"""

from __future__ import annotations

import polars as pl
import pytest

from contracts.capacity_states import STATES, state_column
from reports import columns
from transforms.marts import (
    fct_gpu_capacity_split,
    fct_gpu_hourly,
    fct_job_flags,
    fct_job_usage,
    mart_cluster_monthly,
    mart_department_monthly,
    mart_user_monthly,
)

SUBSETS = {
    "CLUSTER_SCHEMA": mart_cluster_monthly.SCHEMA,
    "DEPARTMENT_SCHEMA": mart_department_monthly.SCHEMA,
    "JOB_SCHEMA": fct_job_usage.SCHEMA,
    "OPTIONAL_JOB_COLUMNS": fct_job_usage.SCHEMA,
    "RUN_SCHEMA": fct_job_usage.SCHEMA,
    "HOURLY_SCHEMA": fct_gpu_hourly.SCHEMA,  # summed per cluster and hour
    "MODEL_HOUR_SCHEMA": fct_gpu_hourly.SCHEMA,  # summed per model label and hour
    "FLAG_SCHEMA": fct_job_flags.SCHEMA,
    "USER_SCHEMA": mart_user_monthly.SCHEMA,
    "FLAG_MONTH_SCHEMA": mart_user_monthly.SCHEMA,  # summed per cluster, month and department
}


def _as_read(mart: pl.DataType, report: pl.DataType) -> bool:
    """The report reads the mart's type, or a whole-number count as Float64 (``conform`` casts)."""
    return mart == report or (mart.is_integer() and report == pl.Float64())


@pytest.mark.parametrize("name", SUBSETS)
def test_the_review_reads_columns_the_mart_has(name: str) -> None:
    subset, mart = pl.Schema(getattr(columns, name)), pl.Schema(SUBSETS[name])
    assert [column for column in subset if column not in mart] == []
    assert [
        (column, mart[column], dtype) for column, dtype in subset.items() if not _as_read(mart[column], dtype)
    ] == []


def test_every_subset_is_checked() -> None:
    subsets = {name for name, value in vars(columns).items() if name.isupper() and isinstance(value, dict)}
    # SEGMENT_SCHEMA: the price segments, not a mart; CAPACITY_STATE_SCHEMA: seconds summed as hours (below)
    assert subsets - {"SEGMENT_SCHEMA", "CAPACITY_STATE_SCHEMA"} == set(SUBSETS)


def test_capacity_states_are_the_split_columns_in_hours() -> None:
    split = fct_gpu_capacity_split.SCHEMA
    hours = [c for c in columns.CAPACITY_STATE_SCHEMA if c.endswith("_gpu_hours") and c != "capacity_gpu_hours"]
    assert hours == [f"{state}_gpu_hours" for state in STATES]
    assert all(state_column(state) in split for state in STATES) and "capacity_seconds" in split
