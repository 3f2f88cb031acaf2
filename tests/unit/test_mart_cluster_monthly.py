from datetime import date, datetime

import polars as pl
import pytest

from transforms.marts.mart_cluster_monthly import SCHEMA, capacity_gpu_hours, mart_cluster_monthly


def _usage(rows: list[dict]) -> pl.DataFrame:
    base = {
        "cluster": "c1",
        "start_time": datetime(2026, 10, 1),
        "gpu_hours": 0.0,
        "active_gpu_hours": None,
        "idle_gpu_hours": None,
        "zero_util_gpu_hours": 0.0,
        "utilization": None,
        "n_samples": 0,
        "expected_samples": 0.0,
        "queue_seconds": 0.0,
        "energy_kwh": 0.0,
    }
    return pl.DataFrame([{**base, **r} for r in rows])


def test_capacity_counts_mig_fractions() -> None:
    inventory = pl.DataFrame({"cluster": ["c1"] * 3 + ["c2"], "gpu_fraction": [1.0, 3 / 7, 4 / 7, 1.0]})
    cap = capacity_gpu_hours(inventory, datetime(2026, 10, 1), datetime(2026, 11, 1))
    assert cap["capacity_gpus"].to_list() == pytest.approx([2.0, 1.0])
    assert cap["capacity_gpu_hours"].to_list() == pytest.approx([2 * 744, 744])


def test_headline_numbers() -> None:
    usage = _usage(
        [
            {
                "gpu_hours": 100.0,
                "active_gpu_hours": 60.0,
                "idle_gpu_hours": 40.0,
                "utilization": 0.6,
                "n_samples": 90,
                "expected_samples": 100.0,
                "queue_seconds": 10.0,
                "energy_kwh": 5.0,
            },
            {"gpu_hours": 50.0, "n_samples": 0, "expected_samples": 50.0, "queue_seconds": 30.0},  # no samples
            {"gpu_hours": 0.0, "start_time": None, "queue_seconds": None},  # pending: not a job of the month
        ]
    )
    capacity = pl.DataFrame(
        {"cluster": ["c1", "c2"], "capacity_gpus": [1.0, 2.0], "capacity_gpu_hours": [744.0, 1488.0]}
    )
    out = mart_cluster_monthly(usage, capacity, date(2026, 10, 1))
    assert list(out.schema) == list(SCHEMA)
    c1, c2 = out.rows(named=True)
    assert c1["allocated_gpu_hours"] == 150.0
    assert c1["infra_idle_gpu_hours"] == 744.0 - 150.0
    assert c1["allocation_ratio"] == pytest.approx(150 / 744)
    assert c1["utilization"] == pytest.approx(0.6)  # jobs without samples neither busy nor idle
    assert c1["job_count"] == 2 and c1["jobs_without_samples"] == 1
    assert c1["sample_coverage"] == pytest.approx(90 / 150)
    assert c1["queue_seconds_p50"] == pytest.approx(20.0)
    assert c2["job_count"] == 0 and c2["allocated_gpu_hours"] == 0.0 and c2["utilization"] is None


def test_a_metrics_only_cluster_has_its_gpus_utilization_and_coverage() -> None:
    usage = _usage(
        [{"gpu_hours": 10.0, "active_gpu_hours": 5.0, "utilization": 0.5, "n_samples": 9, "expected_samples": 10.0}]
    )
    capacity = pl.DataFrame(
        {"cluster": ["c1", "plain"], "capacity_gpus": [1.0, 8.0], "capacity_gpu_hours": [744.0, 5952.0]}
    )
    devices = pl.DataFrame(
        {"cluster": ["plain"], "best_sum": [30.0], "best_n": [120.0], "n_samples": [120.0], "expected_samples": [480.0]}
    )
    c1, plain = mart_cluster_monthly(usage, capacity, date(2026, 10, 1), devices).rows(named=True)
    assert (c1["utilization"], c1["sample_coverage"]) == (pytest.approx(0.5), pytest.approx(0.9))  # its jobs'
    assert (plain["utilization"], plain["sample_coverage"]) == (0.25, 0.25)  # every sample of its GPUs
    assert (plain["allocated_gpu_hours"], plain["job_count"], plain["infra_idle_gpu_hours"]) == (0.0, 0, 5952.0)
