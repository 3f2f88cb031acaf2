"""fct_gpu_hourly: pods whose GPUs sent no samples hold their request on their node, spread
over the GPUs pod-labelled samples left free (host_spread / host_whole), within capacity."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
import pytest

from config.frames import INVENTORY_SCHEMA
from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA as ATTRIBUTED_SCHEMA
from transforms.marts.fct_gpu_hourly import fct_gpu_hourly
from transforms.marts.gpu_hourly_pods import pod_host_deficit
from transforms.staging.stg_kube__pods import SCHEMA as PODS_SCHEMA
from transforms.staging.stg_slurm__jobs import SCHEMA as JOBS_SCHEMA

T0 = datetime(2024, 3, 10, 10)
PERIOD = (T0, T0 + timedelta(hours=2))


def instance(gpu: int, host: str = "k1") -> dict:
    return {c: None for c in INVENTORY_SCHEMA} | {
        "cluster": "c1",
        "hostname": host,
        "gpu": gpu,
        "gpu_model": "H100",
        "gpu_fraction": 1.0,
    }


def pod(
    name: str, gpus: float, node: str = "k1", start: datetime = T0, end: datetime | None = T0 + timedelta(hours=1)
) -> dict:
    return {c: None for c in PODS_SCHEMA} | {
        "cluster": "c1",
        "namespace": "ml",
        "pod": name,
        "pod_uid": name,
        "node": node,
        "gpus": gpus,
        "gpu_slots": int(max(gpus, 1)),
        "start_time": start,
        "end_time": end,
    }


def sample_row(gpu: int, job: str, samples: float = 120.0) -> dict:
    return {c: (0.0 if c.endswith(("_n", "_sum")) else None) for c in ATTRIBUTED_SCHEMA} | {
        "cluster": "c1",
        "hostname": "k1",
        "gpu": gpu,
        "hour": T0,
        "job_id_raw": job,
        "start_time": T0,
        "attribution_method": "pod_label",
        "samples": samples,
    }


def hourly(inventory: list[dict], rows: list[dict], pods: list[dict] | None) -> pl.DataFrame:
    frame = None if pods is None else pl.DataFrame(pods, schema=PODS_SCHEMA)
    return fct_gpu_hourly(
        pl.DataFrame(inventory, schema=INVENTORY_SCHEMA),
        pl.DataFrame(schema=JOBS_SCHEMA),
        pl.DataFrame(rows, schema=ATTRIBUTED_SCHEMA),
        *PERIOD,
        step_seconds=30,
        pods=frame,
    )


def test_silent_pod_fills_the_gpus_sampled_pods_left_free() -> None:
    inventory = [instance(g) for g in range(4)]
    rows = [sample_row(0, "ml/seen")]  # the seen pod's 120 samples x 30 s = the whole hour on GPU 0
    out = hourly(inventory, rows, [pod("seen", 1.0), pod("silent", 2.0)])
    first = out.filter(pl.col("hour") == T0).sort("gpu")
    assert first["allocated_seconds"].to_list() == pytest.approx([3600.0, 2400.0, 2400.0, 2400.0])
    assert set(first["allocation_basis"]) == {"host_spread"}
    assert first["allocated_seconds"].sum() == pytest.approx(3 * 3600.0)  # 1 seen + 2 silent GPU-hours
    assert (out["allocated_seconds"] <= out["capacity_seconds"] + 1e-9).all()
    assert out.filter(pl.col("hour") > T0)["allocated_seconds"].sum() == 0.0


def test_sampled_pods_and_no_pods_frame_leave_the_allocation_unchanged() -> None:
    inventory = [instance(g) for g in range(2)]
    rows = [sample_row(0, "ml/seen")]
    with_pods = hourly(inventory, rows, [pod("seen", 1.0)])
    without = hourly(inventory, rows, None)
    assert with_pods.equals(without)
    assert with_pods.filter(pl.col("hour") == T0)["allocation_basis"].to_list() == ["pod_label", None]


def test_whole_node_pod_is_host_whole_and_open_pods_run_to_the_period_end() -> None:
    out = hourly([instance(0), instance(1)], [], [pod("open", 2.0, end=None)])
    assert out["allocated_seconds"].sum() == pytest.approx(2 * 2 * 3600.0)
    assert set(out["allocation_basis"]) == {"host_whole"}


def test_open_sampled_pod_is_placed_on_its_node_after_its_samples_end() -> None:
    out = hourly([instance(0), instance(1)], [sample_row(0, "ml/open")], [pod("open", 1.0, end=None)])
    later = out.filter(pl.col("hour") > T0).sort("gpu")
    assert later["allocated_seconds"].to_list() == pytest.approx([1800.0, 1800.0])  # one GPU-hour, host average
    assert set(later["allocation_basis"]) == {"host_spread"}
    assert out["allocated_seconds"].sum() == pytest.approx(2 * 3600.0)


def test_a_pod_is_sampled_only_by_rows_of_its_job_on_its_node() -> None:
    pods = pl.DataFrame(
        [pod("a", 1.0, node="k1"), pod("a", 1.0, node="k2"), pod("b", 1.0, start=None)], schema=PODS_SCHEMA
    )
    rows = pl.DataFrame(
        [sample_row(0, "ml/a"), sample_row(1, "ml/a", samples=0.0) | {"hostname": "k2"}], schema=ATTRIBUTED_SCHEMA
    )
    out = pod_host_deficit(pods, rows, *PERIOD, step_seconds=30)
    assert out.select("hostname", "hour", "_held_gpu_seconds").rows() == [("k2", T0, 3600.0)]  # b never started


@pytest.mark.parametrize(("samples", "placed"), [(119.0, 0.0), (118.0, 60.0)])
def test_deficit_is_placed_above_one_step_of_the_pods_gpus(samples: float, placed: float) -> None:
    pods = pl.DataFrame([pod("a", 1.0)], schema=PODS_SCHEMA)
    rows = pl.DataFrame([sample_row(0, "ml/a", samples=samples)], schema=ATTRIBUTED_SCHEMA)
    out = pod_host_deficit(pods, rows, *PERIOD, step_seconds=30)
    assert (out["_held_gpu_seconds"].sum() or 0.0) == pytest.approx(placed)
