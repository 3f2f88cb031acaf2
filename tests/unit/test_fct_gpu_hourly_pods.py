"""fct_gpu_hourly, Kubernetes side: pods allocate the seconds their pod-labelled samples stand
for on each GPU (a time-sliced GPU's pods share one GPU's seconds), within capacity."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
import pytest

from config.frames import INVENTORY_SCHEMA
from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA as ATTRIBUTED_SCHEMA
from transforms.marts.fct_gpu_hourly import fct_gpu_hourly
from transforms.staging.stg_slurm__jobs import SCHEMA as JOBS_SCHEMA

T0 = datetime(2024, 3, 10, 10)
PERIOD = (T0, T0 + timedelta(hours=2))


def instance(gpu: int, gi_id: int | None = None, profile: str | None = None, fraction: float = 1.0) -> dict:
    return {c: None for c in INVENTORY_SCHEMA} | {
        "cluster": "c1",
        "hostname": "k1",
        "gpu": gpu,
        "gpu_model": "H100",
        "gpu_i_id": gi_id,
        "gpu_i_profile": profile,
        "gpu_fraction": fraction,
    }


def row(
    gpu: int,
    method: str,
    samples: float,
    job: str | None = "ml/a",
    gi_id: int | None = None,
    profile: str | None = None,
) -> dict:
    return {c: (0.0 if c.endswith(("_n", "_sum")) else None) for c in ATTRIBUTED_SCHEMA} | {
        "cluster": "c1",
        "hostname": "k1",
        "gpu": gpu,
        "gpu_i_id": gi_id,
        "gpu_i_profile": profile,
        "hour": T0,
        "job_id_raw": job,
        "start_time": T0,
        "attribution_method": method,
        "samples": samples,
        "best_sum": 0.25 * samples,
        "best_n": samples,
    }


def hourly(inventory: list[dict], rows: list[dict]) -> pl.DataFrame:
    out = fct_gpu_hourly(
        pl.DataFrame(inventory, schema=INVENTORY_SCHEMA),
        pl.DataFrame(schema=JOBS_SCHEMA),
        pl.DataFrame(rows, schema=ATTRIBUTED_SCHEMA),
        *PERIOD,
        step_seconds=30,
    )
    return out.filter(pl.col("hour") == T0)


def test_pod_samples_allocate_their_seconds_and_a_shared_gpu_once() -> None:
    inventory = [instance(0), instance(1), instance(2), instance(3, 0, "1g.10gb", 1 / 7)]
    rows = [
        row(0, "pod_label", 60.0),  # half the hour
        *(row(1, "pod_shared", 40.0, job=f"ml/p{i}") for i in range(3)),  # three pods on one GPU, all hour
        row(2, "unallocated", 120.0, job=None),
        row(3, "pod_label", 130.0, gi_id=0, profile="1g.10gb"),  # more samples than the hour holds
    ]
    out = {r["gpu"]: r for r in hourly(inventory, rows).iter_rows(named=True)}
    assert out[0]["allocated_seconds"] == pytest.approx(1800.0) and out[0]["allocation_basis"] == "pod_label"
    assert out[1]["allocated_seconds"] == pytest.approx(3600.0) and out[1]["attributed_samples"] == pytest.approx(120.0)
    assert out[1]["active_seconds"] == pytest.approx(900.0)
    assert out[2]["allocated_seconds"] == 0.0 and out[2]["allocation_basis"] is None
    assert out[3]["allocated_seconds"] == pytest.approx(3600 / 7) and out[3]["capacity_seconds"] == pytest.approx(
        3600 / 7
    )
    assert all(r["allocated_seconds"] <= r["capacity_seconds"] + 1e-9 for r in out.values())
