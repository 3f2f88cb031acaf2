"""mart_department_monthly: fct_job_usage summed per cluster, month, division and department."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl
import pytest

from transforms.fct_job_usage import SCHEMA as USAGE_SCHEMA
from transforms.fct_job_usage import fct_job_usage
from transforms.mart_department_monthly import SCHEMA, mart_department_monthly
from transforms.stg_dcgm__gpu_hourly import SCHEMA as HOURLY_SCHEMA
from transforms.stg_slurm__jobs import SCHEMA as JOBS_SCHEMA

MARCH = datetime(2024, 3, 1)
CAPACITY = pl.DataFrame({"cluster": ["c1", "c2"], "capacity_gpu_hours": [1000.0, 0.0]})


def usage(department: str, user: str, gpu_hours: float, utilization: float | None, **fields) -> dict:
    """A fct_job_usage row in March 2024 on c1."""
    active = None if utilization is None else gpu_hours * utilization
    row = {c: None for c in USAGE_SCHEMA} | {
        "cluster": "c1", "month": date(2024, 3, 1), "department": department, "division": "sci",
        "user_name": user, "gpu_hours": gpu_hours, "utilization": utilization, "active_gpu_hours": active,
        "idle_gpu_hours": None if active is None else gpu_hours - active, "zero_util_gpu_hours": 0.0,
        "start_time": datetime(2024, 3, 10),
    }
    return row | fields


def mart(rows: list[dict]) -> pl.DataFrame:
    return mart_department_monthly(pl.DataFrame(rows, schema=USAGE_SCHEMA), MARCH, CAPACITY)


def test_department_sums_counts_and_ratios() -> None:
    rows = [
        usage("phys", "alice", 10.0, 0.5, queue_seconds=0, energy_kwh=1.0, zero_util_gpu_hours=2.0),
        usage("phys", "alice", 20.0, 0.25, queue_seconds=100, energy_kwh=2.0),
        usage("phys", "bob", 30.0, None, queue_seconds=200),  # no samples: not measured
        usage("phys", "bob", 0.0, None, queue_seconds=None),  # pending
        usage("chem", "carol", 5.0, 1.0, queue_seconds=300),
    ]
    out = mart(rows)
    assert out.schema == pl.Schema(SCHEMA)
    phys = out.filter(pl.col("department") == "phys").row(0, named=True)
    assert (phys["cluster"], phys["month"], phys["division"]) == ("c1", date(2024, 3, 1), "sci")
    assert (phys["job_count"], phys["user_count"]) == (4, 2)
    assert (phys["gpu_hours"], phys["measured_gpu_hours"]) == (60.0, 30.0)
    assert (phys["active_gpu_hours"], phys["idle_gpu_hours"], phys["zero_util_gpu_hours"]) == (10.0, 20.0, 2.0)
    assert phys["utilization"] == pytest.approx(10.0 / 30.0)
    assert phys["energy_kwh"] == 3.0
    # linear interpolation over [0, 100, 200]
    assert (phys["queue_seconds_p50"], phys["queue_seconds_p95"]) == pytest.approx((100.0, 190.0))
    assert phys["share_of_capacity"] == pytest.approx(60.0 / 1000.0)
    chem = out.filter(pl.col("department") == "chem").row(0, named=True)
    assert (chem["job_count"], chem["utilization"], chem["energy_kwh"]) == (1, 1.0, None)


def test_other_months_are_ignored_and_unknown_capacity_gives_null_share() -> None:
    rows = [
        usage("phys", "alice", 10.0, 0.5),
        usage("phys", "alice", 99.0, 0.5, month=date(2024, 4, 1)),
        usage("phys", "alice", 7.0, 0.5, cluster="c2"),
        usage("phys", "alice", 7.0, 0.5, cluster="c3"),
    ]
    out = mart(rows)
    assert out.select("cluster", "gpu_hours", "share_of_capacity").rows() == [
        ("c1", 10.0, 0.01),
        ("c2", 7.0, None),  # capacity 0
        ("c3", 7.0, None),  # capacity unknown
    ]


def test_unmeasured_department_has_null_utilization() -> None:
    out = mart([usage("phys", "alice", 10.0, None)])
    assert out.select("gpu_hours", "measured_gpu_hours", "utilization", "active_gpu_hours").row(0) == (
        10.0, 0.0, None, None
    )


def test_department_mart_sums_equal_job_sums() -> None:
    start = datetime(2024, 3, 10, 10)
    jobs = []
    hours = []
    for i, account in enumerate(["physics", "physics", "chemistry", "nobody", "physics"]):
        begin = start + timedelta(hours=3 * i)
        jobs.append(
            {c: None for c in JOBS_SCHEMA} | {
                "cluster": "c1", "scheduler": "slurm", "job_id": str(i), "job_id_raw": str(i),
                "user_name": f"u{i % 2}", "account": account, "submit_time": begin - timedelta(minutes=i),
                "eligible_time": begin - timedelta(minutes=i), "start_time": begin,
                "end_time": begin + timedelta(hours=2), "is_open": False, "gpus": float(i + 1),
                "gpu_slots": i + 1, "is_mig": False, "hosts": ["n1"],
            }
        )
        for h in range(2 if i != 4 else 0):  # run 4 has no samples
            hours.append(
                {c: (0 if c.endswith(("_n", "_sum")) else None) for c in HOURLY_SCHEMA} | {
                    "cluster": "c1", "hostname": "n1", "gpu": 0, "hpc_job": str(i), "hour": begin + timedelta(hours=h),
                    "n_samples": 60, "zero_samples": 6 * i, "sm_active_sum": 6.0 * (i + h), "sm_active_n": 60,
                    "energy_delta_mj": 3.6e9 * (i + 1),
                }
            )
    accounts = pl.DataFrame(
        {"cluster": ["c1", "c1"], "account": ["physics", "chemistry"], "department": ["phys", "chem"],
         "department_name": ["P", "C"], "division": ["sci", "sci"], "division_name": ["S", "S"]}
    )
    job_usage = fct_job_usage(
        pl.DataFrame(jobs, schema=JOBS_SCHEMA), pl.DataFrame(hours, schema=HOURLY_SCHEMA), accounts,
        pl.DataFrame({"cluster": ["c1"], "hostname": ["n1"], "gpu_model": ["H100"]}),
        MARCH, datetime(2024, 4, 1), 60,
    )
    out = mart_department_monthly(job_usage, MARCH, CAPACITY)
    assert sorted(out.get_column("department").to_list()) == ["chem", "phys", "unmapped"]
    assert out.get_column("job_count").sum() == job_usage.height == 5
    for column in ("gpu_hours", "active_gpu_hours", "idle_gpu_hours", "zero_util_gpu_hours", "energy_kwh"):
        assert out.get_column(column).sum() == pytest.approx(job_usage.get_column(column).sum()), column
    assert out.get_column("gpu_hours").sum() == pytest.approx(2.0 * (1 + 2 + 3 + 4 + 5))
    phys = out.filter(pl.col("department") == "phys").row(0, named=True)
    assert phys["measured_gpu_hours"] == pytest.approx(2.0 * (1 + 2))  # run 4 (10 GPU-hours) unmeasured
    assert phys["gpu_hours"] == pytest.approx(2.0 * (1 + 2 + 5))
