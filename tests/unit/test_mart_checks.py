"""Blocking mart checks (pipelines/checks/marts.py) and the staged-jobs GX suite."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl
import pytest
from dagster import AssetCheckSeverity, AssetKey

from pipelines.checks.gx_adapter import run_suite_on_frame
from pipelines.checks.marts import (
    allocation_within_capacity_check,
    capacity_balance_check,
    matches_job_usage_check,
)
from pipelines.checks.slurm_records import unknown_states_check
from pipelines.checks.suites import node_gpu_capacity, staged_jobs_frame, staged_jobs_suite
from transforms.marts.fct_job_usage import SCHEMA as USAGE_SCHEMA
from transforms.marts.mart_cluster_monthly import capacity_gpu_hours
from transforms.marts.mart_department_monthly import mart_department_monthly
from transforms.staging.stg_slurm__jobs import SCHEMA as JOBS_SCHEMA

MONTH = date(2026, 10, 1)
START, END = datetime(2026, 10, 1), datetime(2026, 11, 1)
KEY = ["marts", "mart_department_monthly"]
# 2 hosts x 8 GPUs on c1; on c2 one host with 4 GPUs cut into 3g + 3g + 1g MIG instances.
INVENTORY = pl.DataFrame(
    {
        "cluster": ["c1"] * 16 + ["c2"] * 12,
        "hostname": ["a"] * 8 + ["b"] * 8 + ["m"] * 12,
        "gpu_fraction": [1.0] * 16 + [3 / 7, 3 / 7, 1 / 7] * 4,
    }
)


def usage(cluster: str, gpu_hours: float, department: str = "phys") -> dict:
    return {c: None for c in USAGE_SCHEMA} | {
        "cluster": cluster,
        "month": MONTH,
        "department": department,
        "division": "sci",
        "user_name": "u",
        "gpu_hours": gpu_hours,
        "state": "COMPLETED",
    }


def build(rows: list[dict]) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    jobs = pl.DataFrame(rows, schema=USAGE_SCHEMA)
    capacity = capacity_gpu_hours(INVENTORY, START, END)
    return jobs, capacity, mart_department_monthly(jobs, START, capacity)


def test_capacity_balance_passes_on_the_mart_exactly() -> None:
    # 1/3 and 1/7 fractions: sums that are not exact in binary floating point
    jobs, capacity, mart = build([usage("c1", 100 / 3), usage("c1", 7.1, "chem"), usage("c2", 1 / 7 * 5)])
    result = capacity_balance_check(mart, capacity, MONTH, KEY)
    assert result.passed, result.description
    assert (result.check_name, result.severity, result.asset_key) == (
        "capacity_balance",
        AssetCheckSeverity.ERROR,
        AssetKey(KEY),
    )
    assert capacity.filter(pl.col("cluster") == "c1")["capacity_gpu_hours"].item() == 16 * 31 * 24


def test_capacity_balance_fails_on_over_allocation_drift_missing_row_and_unknown_cluster() -> None:
    jobs, capacity, mart = build([usage("c1", 16 * 31 * 24 + 5.0), usage("c2", 1.0)])
    over = capacity_balance_check(mart, capacity, MONTH, KEY)
    assert not over.passed and "over the capacity" in over.description and "'c1'" in over.description

    _, _, mart = build([usage("c1", 10.0)])

    def shifted(by: float) -> pl.DataFrame:
        spare_c2 = pl.col("is_unallocated") & (pl.col("cluster") == "c2")
        return mart.with_columns(pl.when(spare_c2).then(pl.col("gpu_hours") + by).otherwise(pl.col("gpu_hours")))

    result = capacity_balance_check(shifted(2e-6), capacity, MONTH, KEY)
    assert not result.passed and "'c2'" in result.description and "'c1'" not in result.description
    assert capacity_balance_check(shifted(5e-7), capacity, MONTH, KEY).passed  # within 1e-6 GPU-hours

    missing = capacity_balance_check(mart.filter(~pl.col("is_unallocated")), capacity, MONTH, KEY)
    assert not missing.passed and "0 unallocated rows" in missing.description

    _, _, mart = build([usage("c9", 3.0)])
    unknown = capacity_balance_check(mart, capacity, MONTH, KEY)
    assert not unknown.passed and "'c9'" in unknown.description and "no capacity" in unknown.description


def test_department_hours_match_job_usage_and_fail_when_a_row_is_lost() -> None:
    jobs, _, mart = build([usage("c1", 2.5), usage("c1", 4.0, "chem"), usage("c2", 0.5)])
    assert matches_job_usage_check(mart, jobs, MONTH, KEY).passed
    lost = matches_job_usage_check(mart.filter(pl.col("department") != "chem"), jobs, MONTH, KEY)
    assert not lost.passed and "'c1'" in lost.description and "'c2'" not in lost.description
    extra = jobs.vstack(pl.DataFrame([usage("c2", 1e-5)], schema=USAGE_SCHEMA))
    assert not matches_job_usage_check(mart, extra, MONTH, KEY).passed


def hourly(allocated: list[float], capacity: list[float], clusters: list[str] | None = None) -> pl.DataFrame:
    hour = datetime(2026, 10, 3, 5)
    return pl.DataFrame(
        {
            "cluster": clusters or ["c1"] * len(allocated),
            "hour": [hour] * len(allocated),
            "allocated_seconds": allocated,
            "capacity_seconds": capacity,
        }
    )


def test_allocation_within_capacity_per_cluster_hour_and_per_row() -> None:
    key = ["marts", "fct_gpu_hourly"]
    assert allocation_within_capacity_check(hourly([3600.0, 1800.0], [3600.0, 3600.0]), key).passed
    assert allocation_within_capacity_check(hourly([3600.0 + 1e-3], [3600.0]), key).passed  # within 1e-6 GPU-hours
    over_hour = allocation_within_capacity_check(hourly([3601.0, 3600.0], [3600.0, 3600.0], ["c1", "c2"]), key)
    assert not over_hour.passed and "'c1'" in over_hour.description and "'c2'" not in over_hour.description
    # one GPU over, another under: the hour's sum balances, the row does not
    row = allocation_within_capacity_check(hourly([4000.0, 100.0], [3600.0, 3600.0]), key)
    assert not row.passed and row.metadata["rows_over_capacity"].value == 1


def staged(**fields) -> dict:
    t = datetime(2026, 10, 2, 8)
    return (
        {c: None for c in JOBS_SCHEMA}
        | {
            "cluster": "c1",
            "job_id_raw": "1",
            "state": "COMPLETED",
            "submit_time": t,
            "start_time": t,
            "end_time": t + timedelta(hours=1),
            "gpus": 8.0,
            "n_nodes": 1,
        }
        | fields
    )


def run_jobs_suite(rows: list[dict]):
    frame = staged_jobs_frame(pl.DataFrame(rows, schema=JOBS_SCHEMA), node_gpu_capacity(INVENTORY))
    return run_suite_on_frame(staged_jobs_suite(), frame, ["staging", "stg_slurm__jobs"], "gx_stg_slurm__jobs")


def failed(result) -> list[str]:
    return [item["expectation"] for item in result.metadata["failed_expectations"].value]


def test_staged_jobs_suite_passes_real_shapes() -> None:
    rows = [
        staged(),
        staged(job_id_raw="2", gpus=16.0, n_nodes=2),
        staged(job_id_raw="3", start_time=None, end_time=None, state="PENDING", gpus=1.0),
        staged(job_id_raw="4", end_time=None, state="RUNNING"),  # open
        staged(job_id_raw="1", start_time=datetime(2026, 10, 3), end_time=datetime(2026, 10, 3, 1)),  # requeued run
        staged(cluster="c2", gpus=4.0, n_nodes=1),  # all of m's MIG instances: 4 GPUs
        staged(cluster="c9", gpus=64.0),  # cluster not in the inventory: GPUs not checked
    ]
    result = run_jobs_suite(rows)
    assert result.passed, failed(result)


@pytest.mark.parametrize(
    ("bad", "expectation"),
    [
        (staged(), "expect_compound_columns_to_be_unique"),
        (staged(job_id_raw="9", end_time=datetime(2026, 10, 2, 7)), "expect_column_pair_values_a_to_be_greater_than_b"),
        (staged(job_id_raw="9", gpus=17.0, n_nodes=2), "expect_column_pair_values_a_to_be_greater_than_b"),
        (staged(job_id_raw="9", cluster="c2", gpus=4.01), "expect_column_pair_values_a_to_be_greater_than_b"),
    ],
)
def test_staged_jobs_suite_fails_each_violation(bad: dict, expectation: str) -> None:
    result = run_jobs_suite([staged(), bad])
    assert not result.passed
    assert failed(result) == [expectation]
    # what the CLI prints: the suite, the expectation, its counts and the offending values
    assert result.description.startswith("suite staging.stg_slurm__jobs: 1 of 8 expectations failed over 2 rows; ")
    assert f"{expectation}" in result.description and "unexpected" in result.description


def test_failed_check_description_names_up_to_five_offending_values() -> None:
    rows = [staged(job_id_raw=str(i), cluster="c1", gpus=9.0 + i) for i in range(7)]
    result = run_jobs_suite([staged(job_id_raw="ok"), *rows])
    assert result.description == (
        "suite staging.stg_slurm__jobs: 1 of 8 expectations failed over 8 rows; "
        "expect_column_pair_values_a_to_be_greater_than_b: 7 unexpected (87.5%), "
        "e.g. (8.000000001, 9.0), (8.000000001, 10.0), (8.000000001, 11.0), (8.000000001, 12.0), (8.000000001, 13.0)"
    )


def test_unknown_states_are_a_warning_naming_each_state_with_examples() -> None:
    jobs = pl.DataFrame(
        [staged(job_id_raw=str(i), state="LAUNCH_FAILED") | {"job_id": str(i)} for i in range(7)]
        + [staged(job_id_raw="8") | {"job_id": "8"}],
        schema=JOBS_SCHEMA,
    )
    result = unknown_states_check(jobs, ["staging", "stg_slurm__jobs"], "unknown_slurm_states")
    assert not result.passed and result.severity == AssetCheckSeverity.WARN
    assert result.description == (
        "7 staged runs have a state cardhours does not know, billed as their times say: "
        "LAUNCH_FAILED (7 runs, e.g. job 0, 1, 2, 3, 4)"
    )
