"""fct_gpu_hourly: per GPU (or MIG instance) and hour: capacity, allocated, active, samples."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl
import pytest

from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA as ATTRIBUTED_SCHEMA
from transforms.marts.fct_gpu_hourly import SCHEMA, fct_gpu_hourly
from transforms.staging.stg_slurm__jobs import SCHEMA as JOBS_SCHEMA

DAY = (datetime(2024, 3, 10), datetime(2024, 3, 11))
T0 = datetime(2024, 3, 10, 10)


def inventory(hosts: dict[str, int], mig: dict[str, list[tuple[int, str, float]]] | None = None) -> pl.DataFrame:
    """Whole GPUs per host, or for hosts in ``mig`` one row per (gpu_i_id, profile, fraction) per GPU."""
    rows = []
    for host, gpus in hosts.items():
        for gpu in range(gpus):
            for gi, profile, fraction in (mig or {}).get(host, [(None, None, 1.0)]):
                rows.append(
                    {
                        "cluster": "c1",
                        "hostname": host,
                        "gpu": gpu,
                        "gpu_model": "H100",
                        "gpu_i_id": gi,
                        "gpu_i_profile": profile,
                        "gpu_fraction": fraction,
                    }
                )
    return pl.DataFrame(
        rows,
        schema={
            "cluster": pl.String,
            "hostname": pl.String,
            "gpu": pl.Int16,
            "gpu_model": pl.String,
            "gpu_i_id": pl.Int16,
            "gpu_i_profile": pl.String,
            "gpu_fraction": pl.Float64,
        },
    )


def run(job_id_raw: str, start: datetime, end: datetime | None, gpus: float, hosts=("n1",)) -> dict:
    return {c: None for c in JOBS_SCHEMA} | {
        "cluster": "c1",
        "job_id_raw": job_id_raw,
        "submit_time": start,
        "start_time": start,
        "end_time": end,
        "gpus": gpus,
        "hosts": list(hosts),
    }


def attributed(
    at: datetime,
    gpu: int = 0,
    method: str = "hpc_job_label",
    samples: float = 120.0,
    best: float = 0.5,
    host: str = "n1",
    gpu_i_id: int | None = None,
    profile: str | None = None,
) -> dict:
    return {c: None for c in ATTRIBUTED_SCHEMA} | {
        "cluster": "c1",
        "hostname": host,
        "gpu": gpu,
        "gpu_i_id": gpu_i_id,
        "gpu_i_profile": profile,
        "hour": at,
        "job_id_raw": None if method in ("unattributed", "unallocated") else "9",
        "attribution_method": method,
        "samples": samples,
        "best_sum": best * samples,
        "best_n": samples,
    }


def build(inv: pl.DataFrame, runs: list[dict], rows: list[dict], step_seconds: int = 30) -> pl.DataFrame:
    return fct_gpu_hourly(
        inv,
        pl.DataFrame(runs, schema=JOBS_SCHEMA),
        pl.DataFrame(rows, schema=ATTRIBUTED_SCHEMA),
        DAY[0],
        DAY[1],
        step_seconds,
    )


def at(frame: pl.DataFrame, hour: datetime, gpu: int = 0, host: str = "n1") -> dict:
    return frame.filter((pl.col("hour") == hour) & (pl.col("gpu") == gpu) & (pl.col("hostname") == host)).row(
        0, named=True
    )


def test_every_instance_and_hour_has_a_row_with_capacity() -> None:
    out = build(inventory({"n1": 2, "n2": 1}), [], [])
    assert out.height == 3 * 24
    assert out.schema == pl.Schema(SCHEMA)
    assert out.get_column("capacity_seconds").unique().to_list() == [3600.0]
    assert out.get_column("allocated_seconds").sum() == 0.0
    assert out.get_column("allocation_basis").null_count() == out.height
    assert out.get_column("month").unique().to_list() == [date(2024, 3, 1)]


def test_a_whole_host_run_allocates_each_gpu_clipped_to_the_hour() -> None:
    runs = [run("9", T0 + timedelta(minutes=30), T0 + timedelta(hours=1, minutes=15), gpus=2.0)]
    out = build(inventory({"n1": 2}), runs, [])
    for gpu in (0, 1):
        assert at(out, T0, gpu)["allocated_seconds"] == 1800.0
        assert at(out, T0 + timedelta(hours=1), gpu)["allocated_seconds"] == 900.0
        assert at(out, T0, gpu)["allocation_basis"] == "host_whole"
    assert out.get_column("allocated_seconds").sum() == pytest.approx(2 * 2700.0)


def test_a_partial_run_is_spread_over_the_hosts_gpus() -> None:
    runs = [run("9", T0, T0 + timedelta(hours=1), gpus=1.0), run("8", T0, T0 + timedelta(hours=1), gpus=2.0)]
    out = build(inventory({"n1": 4}), runs, [])
    rows = out.filter(pl.col("hour") == T0)
    assert rows.get_column("allocated_seconds").to_list() == pytest.approx([2700.0] * 4)
    assert rows.get_column("allocation_basis").unique().to_list() == ["host_spread"]


def test_a_multi_host_run_holds_its_count_over_its_hosts() -> None:
    out = build(inventory({"n1": 2, "n2": 2}), [run("9", T0, T0 + timedelta(hours=1), 4.0, ("n1", "n2"))], [])
    assert out.filter(pl.col("hour") == T0).get_column("allocated_seconds").to_list() == [3600.0] * 4


def test_open_run_is_allocated_to_the_period_end() -> None:
    out = build(inventory({"n1": 1}), [run("9", datetime(2024, 3, 10, 22), None, 1.0)], [])
    assert out.get_column("allocated_seconds").sum() == 7200.0


def test_active_samples_and_unattributed() -> None:
    runs = [run("9", T0, T0 + timedelta(hours=1), 1.0)]
    rows = [
        attributed(T0, best=0.25),
        attributed(T0, method="unattributed", samples=6.0, best=0.9),
        attributed(T0, method="unallocated", samples=2.0, best=0.9),
    ]
    row = at(build(inventory({"n1": 1}), runs, rows), T0)
    assert row["active_seconds"] == pytest.approx(3600 * 0.25)
    assert (row["n_samples"], row["attributed_samples"], row["unattributed_samples"]) == (128, 120.0, 6)
    assert (row["expected_samples"], row["coverage"]) == (120, 1.0)


def test_hour_without_attributed_samples_has_null_active() -> None:
    out = build(inventory({"n1": 1}), [run("9", T0, T0 + timedelta(hours=1), 1.0)], [])
    row = at(out, T0)
    assert (row["allocated_seconds"], row["active_seconds"], row["n_samples"], row["coverage"]) == (
        3600.0,
        None,
        0,
        0.0,
    )


def test_mig_instances_get_fractions_and_samples_by_profile_rank() -> None:
    layout = {"m1": [(0, "3g.40gb", 3 / 7), (1, "2g.20gb", 2 / 7), (2, "2g.20gb", 2 / 7)]}
    inv = inventory({"m1": 1}, layout)
    runs = [run("9", T0, T0 + timedelta(hours=1), 3 / 7, ("m1",))]
    rows = [
        attributed(T0, host="m1", gpu_i_id=9, profile="2g.20gb", samples=10.0),
        attributed(T0, host="m1", gpu_i_id=4, profile="2g.20gb", samples=20.0),
        attributed(T0, host="m1", gpu_i_id=1, profile="3g.40gb", samples=30.0),
    ]
    out = build(inv, runs, rows).filter(pl.col("hour") == T0).sort("gpu_i_id")
    assert out.get_column("capacity_seconds").to_list() == pytest.approx([3600 * 3 / 7, 3600 * 2 / 7, 3600 * 2 / 7])
    assert out.get_column("n_samples").to_list() == [30, 20, 10]
    assert out.get_column("allocated_seconds").sum() == pytest.approx(3600 * 3 / 7)
    assert out.get_column("allocation_basis").unique().to_list() == ["host_spread"]


def test_labelled_runs_are_placed_on_the_gpus_they_held() -> None:
    runs = [run("9", T0, T0 + timedelta(hours=1), gpus=2.0)]
    rows = [attributed(T0, gpu=g) | {"start_time": T0} for g in (0, 2)]
    out = build(inventory({"n1": 4}), runs, rows)
    assert [at(out, T0, g)["allocated_seconds"] for g in range(4)] == [3600.0, 0.0, 3600.0, 0.0]
    assert {at(out, T0, g)["allocation_basis"] for g in range(4)} == {"hpc_job_label"}
    assert at(out, T0, 0)["active_seconds"] == pytest.approx(1800.0)


def test_labels_short_of_what_the_host_held_fall_back_to_the_spread() -> None:
    runs = [run("9", T0, T0 + timedelta(hours=1), gpus=2.0)]
    rows = [attributed(T0, gpu=0) | {"start_time": T0}]  # its second GPU sent no samples
    out = build(inventory({"n1": 4}), runs, rows)
    assert [at(out, T0, g)["allocated_seconds"] for g in range(4)] == [1800.0] * 4
    assert at(out, T0, 0)["allocation_basis"] == "host_spread"
