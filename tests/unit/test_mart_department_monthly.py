"""mart_department_monthly: fct_job_usage summed per cluster, month, division and department."""

from __future__ import annotations

from datetime import date, datetime

import polars as pl
import pytest

from transforms.marts.fct_job_usage import SCHEMA as USAGE_SCHEMA
from transforms.marts.mart_department_monthly import SCHEMA, UNALLOCATED, mart_department_monthly

MARCH = datetime(2024, 3, 1)
CAPACITY = pl.DataFrame({"cluster": ["c1", "c2"], "capacity_gpu_hours": [1000.0, 0.0]})


def usage(department: str, user: str, gpu_hours: float, utilization: float | None, **fields) -> dict:
    """A fct_job_usage row in March 2024 on c1."""
    active = None if utilization is None else gpu_hours * utilization
    row = {c: None for c in USAGE_SCHEMA} | {
        "cluster": "c1",
        "month": date(2024, 3, 1),
        "department": department,
        "division": "sci",
        "user_name": user,
        "gpu_hours": gpu_hours,
        "utilization": utilization,
        "active_gpu_hours": active,
        "idle_gpu_hours": None if active is None else gpu_hours - active,
        "zero_util_gpu_hours": 0.0,
        "start_time": datetime(2024, 3, 10),
    }
    return row | fields


def mart(rows: list[dict], capacity: pl.DataFrame = CAPACITY) -> pl.DataFrame:
    return mart_department_monthly(pl.DataFrame(rows, schema=USAGE_SCHEMA), MARCH, capacity)


def departments(out: pl.DataFrame) -> pl.DataFrame:
    return out.filter(~pl.col("is_unallocated"))


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
    out = departments(mart(rows))
    assert out.select("cluster", "gpu_hours", "share_of_capacity").rows() == [
        ("c1", 10.0, 0.01),
        ("c2", 7.0, None),  # capacity 0
        ("c3", 7.0, None),  # capacity unknown
    ]


def test_unmeasured_department_has_null_utilization() -> None:
    out = departments(mart([usage("phys", "alice", 10.0, None)]))
    assert out.select("gpu_hours", "measured_gpu_hours", "utilization", "active_gpu_hours").row(0) == (
        10.0,
        0.0,
        None,
        None,
    )


def test_department_mart_sums_equal_job_sums() -> None:
    """Every job measure is summed once into exactly one department row (pending runs and
    runs without samples included); unmapped accounts keep their own row."""
    rows = []
    for i, department in enumerate(["phys", "phys", "chem", "unmapped", "phys", "chem", "unmapped"]):
        utilization = None if i in (4, 6) else 0.1 * i
        rows.append(
            usage(
                department,
                f"u{i % 3}",
                1.5 * (i + 1),
                utilization,
                queue_seconds=30 * i,
                energy_kwh=None if utilization is None else 0.25 * i,
                zero_util_gpu_hours=0.1 * i,
                division="unmapped" if department == "unmapped" else "sci",
            )
        )
    rows.append(usage("chem", "u9", 0.0, None, start_time=None, queue_seconds=None))  # pending
    job_usage = pl.DataFrame(rows, schema=USAGE_SCHEMA)
    out = departments(mart_department_monthly(job_usage, MARCH, CAPACITY))
    assert sorted(out.get_column("department").to_list()) == ["chem", "phys", "unmapped"]
    assert out.get_column("job_count").sum() == job_usage.height == 8
    for column in ("gpu_hours", "active_gpu_hours", "idle_gpu_hours", "zero_util_gpu_hours", "energy_kwh"):
        assert out.get_column(column).sum() == pytest.approx(job_usage.get_column(column).sum()), column
    assert out.get_column("gpu_hours").sum() == pytest.approx(1.5 * (1 + 2 + 3 + 4 + 5 + 6 + 7))
    phys = out.filter(pl.col("department") == "phys").row(0, named=True)
    assert phys["measured_gpu_hours"] == pytest.approx(1.5 * (1 + 2))  # run 4 (7.5 GPU-hours) unmeasured
    assert phys["gpu_hours"] == pytest.approx(1.5 * (1 + 2 + 5))
    assert out.filter(pl.col("department") == "chem")["job_count"].item() == 3


def test_unallocated_row_completes_capacity_per_cluster() -> None:
    rows = [
        usage("phys", "alice", 10.0, 0.5),
        usage("chem", "bob", 30.5, None),
        usage("phys", "x", 9.0, 0.5, cluster="c3"),
    ]
    out = mart(rows)
    spare = out.filter(pl.col("is_unallocated"))
    assert spare.select("cluster", "division", "department", "gpu_hours").rows() == [
        ("c1", UNALLOCATED, UNALLOCATED, 1000.0 - 40.5),
        ("c2", UNALLOCATED, UNALLOCATED, 0.0),  # capacity 0, no jobs: still a row
    ]  # c3 has no capacity: no row
    assert UNALLOCATED == "(unallocated)"
    c1 = out.filter(pl.col("cluster") == "c1")
    assert c1.get_column("gpu_hours").sum() == pytest.approx(1000.0, abs=1e-9)
    row = spare.row(0, named=True)
    assert (row["job_count"], row["user_count"], row["preempted_job_count"], row["measured_gpu_hours"]) == (
        0,
        0,
        0,
        0.0,
    )
    assert (row["active_gpu_hours"], row["idle_gpu_hours"], row["utilization"], row["queue_seconds_max"]) == (None,) * 4
    assert row["share_of_capacity"] == pytest.approx(959.5 / 1000.0)
    assert out.filter(pl.col("cluster") == "c1").get_column("is_unallocated").to_list() == [False, False, True]


def test_over_allocation_is_kept_negative_not_clipped() -> None:
    out = mart([usage("phys", "alice", 1200.0, 0.5)])
    spare = out.filter(pl.col("is_unallocated") & (pl.col("cluster") == "c1"))
    assert spare.get_column("gpu_hours").to_list() == [-200.0]


def test_no_jobs_gives_only_capacity_rows() -> None:
    out = mart([])
    assert out.schema == pl.Schema(SCHEMA)
    assert out.select("cluster", "gpu_hours", "is_unallocated").rows() == [("c1", 1000.0, True), ("c2", 0.0, True)]


def test_preempted_runs_and_their_gpu_hours_and_queue_max() -> None:
    rows = [
        usage("phys", "alice", 4.0, 0.5, state="PREEMPTED", queue_seconds=10),
        usage("phys", "alice", 6.0, 0.5, state="COMPLETED", queue_seconds=700),  # the requeued run
        usage("phys", "bob", 2.0, 0.5, state="REQUEUED", queue_seconds=5),  # not known to be a preemption
        usage("phys", "bob", 3.0, None, state="PREEMPTED", queue_seconds=None),
        usage("chem", "carol", 1.0, 1.0, state="COMPLETED", queue_seconds=20),
    ]
    out = departments(mart(rows))
    got = out.select("department", "preempted_job_count", "preempted_gpu_hours", "queue_seconds_max").rows()
    assert got == [("chem", 0, 0.0, 20.0), ("phys", 2, 7.0, 700.0)]
