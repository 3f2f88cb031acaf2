"""mart_deployment_monthly: replica pods of a Deployment rolled up per month."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
import pytest

from transforms.marts.fct_job_usage import SCHEMA as USAGE_SCHEMA
from transforms.marts.mart_deployment_monthly import SCHEMA, mart_deployment_monthly
from transforms.staging.stg_kube__jobs import SCHEMA as JOBS_SCHEMA
from transforms.staging.stg_kube__pods import SCHEMA as PODS_SCHEMA

MARCH = (datetime(2024, 3, 1), datetime(2024, 4, 1))
T0 = datetime(2024, 3, 10)


def replica(
    name: str,
    start: datetime,
    end: datetime | None,
    deployment: str | None = "chat",
    hours: float = 1.0,
    utilization: float | None = 0.5,
    department: str = "nlp",
) -> tuple[dict, dict, dict]:
    job_id = f"inf/{name}"
    usage = {c: None for c in USAGE_SCHEMA} | {
        "cluster": "c1",
        "scheduler": "kubernetes",
        "job_id": job_id,
        "job_id_raw": job_id,
        "start_time": start,
        "end_time": end,
        "department": department,
        "division": "research",
        "gpu_model": "H100",
        "gpu_hours": hours,
        "utilization": utilization,
        "active_gpu_hours": None if utilization is None else hours * utilization,
        "energy_kwh": 1.0,
    }
    job = {c: None for c in JOBS_SCHEMA} | {
        "cluster": "c1",
        "job_id": job_id,
        "namespace": "inf",
        "deployment_name": deployment,
    }
    pod = {c: None for c in PODS_SCHEMA} | {
        "cluster": "c1",
        "namespace": "inf",
        "pod": name,
        "start_time": start,
        "end_time": end,
        "deployment_name": deployment,
    }
    return usage, job, pod


def mart(*replicas: tuple[dict, dict, dict], slurm: list[dict] = ()) -> pl.DataFrame:
    usage, jobs, pods = zip(*replicas, strict=True)
    return mart_deployment_monthly(
        pl.DataFrame([*usage, *slurm], schema=USAGE_SCHEMA),
        pl.DataFrame(jobs, schema=JOBS_SCHEMA),
        pl.DataFrame(pods, schema=PODS_SCHEMA),
        *MARCH,
    )


def test_replicas_roll_up_with_their_peak_and_replica_hours() -> None:
    h = timedelta(hours=1)
    out = mart(
        replica("chat-a", T0, T0 + 4 * h, hours=4.0),
        replica("chat-b", T0 + h, T0 + 2 * h, hours=1.0, utilization=None),  # no samples: not measured
        replica("chat-c", T0 + 2 * h, T0 + 3 * h, hours=1.0, department="ads"),  # starts as b ends: peak stays 2
        replica("batch", T0, T0 + h, deployment="batch"),
        replica("other", T0, T0 + h, deployment=None),
    )
    assert out.schema == pl.Schema(SCHEMA) and out["deployment_name"].to_list() == ["batch", "chat"]
    chat = out.row(1, named=True)
    assert (chat["replica_pods"], chat["peak_replicas"]) == (3, 2)
    assert chat["replica_hours"] == pytest.approx(6.0) and chat["mean_replicas"] == pytest.approx(6.0 / (31 * 24))
    assert chat["gpu_hours"] == pytest.approx(6.0) and chat["measured_gpu_hours"] == pytest.approx(5.0)
    assert chat["utilization"] == pytest.approx(0.5) and chat["idle_gpu_hours"] == pytest.approx(2.5)
    assert chat["department"] == "ads"  # the latest replica's


def test_pods_are_clipped_to_the_month_and_open_ones_run_to_its_end() -> None:
    late = datetime(2024, 3, 31, 22)
    out = mart(replica("chat-a", datetime(2024, 2, 29, 23), datetime(2024, 3, 1, 1)), replica("chat-b", late, None))
    row = out.row(0, named=True)
    assert row["replica_hours"] == pytest.approx(1.0 + 2.0) and row["peak_replicas"] == 1


def test_slurm_runs_and_pods_without_a_deployment_are_left_out() -> None:
    slurm = {c: None for c in USAGE_SCHEMA} | {
        "cluster": "c1",
        "scheduler": "slurm",
        "job_id": "inf/x",
        "start_time": T0,
        "gpu_hours": 9.0,
    }
    out = mart(replica("x", T0, T0 + timedelta(hours=1), deployment=None), slurm=[slurm])
    assert out.is_empty()
