"""fct_job_usage: derived measures, the utilization signal, departments and the output schema."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
import pytest

from tests.unit.fct_job_usage_cases import fct, hour, job, sm
from transforms.marts.fct_job_usage import SCHEMA


def test_derived_measures() -> None:
    start = datetime(2024, 3, 10, 10)
    run = job(
        "9",
        start,
        start + timedelta(hours=2),
        gpus=2.0,
        gpu_slots=2,
        hosts=["n1", "n2"],
        submit_time=start - timedelta(minutes=50),
        eligible_time=start - timedelta(minutes=20),
    )
    common = dict(
        zero_samples=15,
        energy_j=1.8e6,
        fb_used_mib_sum=60 * 1000.0,
        fb_used_mib_n=60,
        gpu_util_sum=30.0,
        gpu_util_n=60,
        tensor_active_sum=6.0,
        tensor_active_n=60,
        **sm(0.25),
    )
    hours = [hour("9", start + timedelta(hours=h), start, fb_used_mib_max=1000.0 + h, **common) for h in (0, 1)]
    row = fct([run], hours, step_seconds=30).row(0, named=True)
    assert row["gpu_hours"] == 4.0
    assert row["utilization"] == pytest.approx(0.25)
    assert row["active_gpu_hours"] == pytest.approx(1.0)
    assert row["idle_gpu_hours"] == pytest.approx(3.0)
    assert row["zero_util_gpu_hours"] == pytest.approx(4.0 * 30 / 120)
    assert (row["mean_gpu_util"], row["mean_tensor_active"], row["mean_sm_active"]) == pytest.approx((0.5, 0.1, 0.25))
    assert (row["peak_fb_used_mib"], row["mean_fb_used_mib"]) == (1001.0, 1000.0)
    assert row["energy_kwh"] == pytest.approx(1.0)
    assert (row["queue_seconds"], row["submit_wait_seconds"]) == (1200, 3000)
    assert (row["n_samples"], row["expected_samples"]) == (120, 2 * 7200 / 30)
    assert row["sample_coverage"] == pytest.approx(120 / 480)
    assert (row["hosts"], row["gpu_model"]) == ("n1,n2", "H100")


def test_coverage_is_capped_at_one() -> None:
    start = datetime(2024, 3, 10, 10)
    out = fct([job("9", start, start + timedelta(minutes=30))], [hour("9", start, n=60, **sm(0.5, 60))])
    assert out.get_column("sample_coverage").to_list() == [1.0]


@pytest.mark.parametrize(
    ("fields", "signal", "value"),
    [
        (
            {**sm(0.3), "gr_engine_active_sum": 48.0, "gr_engine_active_n": 60, "gpu_util_sum": 54.0, "gpu_util_n": 60},
            "sm_active",
            0.3,
        ),
        (
            {"gr_engine_active_sum": 48.0, "gr_engine_active_n": 60, "gpu_util_sum": 54.0, "gpu_util_n": 60},
            "gr_engine_active",
            0.8,
        ),
        ({"gpu_util_sum": 54.0, "gpu_util_n": 60}, "gpu_util", 0.9),
    ],
)
def test_utilization_uses_the_best_signal_present(fields: dict, signal: str, value: float) -> None:
    start = datetime(2024, 3, 10, 10)
    out = fct([job("9", start, start + timedelta(hours=1))], [hour("9", start, **fields)])
    assert out.get_column("utilization_signal").to_list() == [signal]
    assert out.get_column("utilization")[0] == pytest.approx(value)


def test_departments_and_mig_models() -> None:
    start, end = datetime(2024, 3, 10, 10), datetime(2024, 3, 10, 17)
    runs = [
        job("1", start, end),
        job("2", start, end, account="nobody"),
        job("3", start, end, gpus=3 / 7, gpu_slots=1, gpu_type="3g.40gb", is_mig=True, hosts=["m1"]),
    ]
    out = fct(runs, []).sort("job_id_raw")
    assert out.select("department", "division").rows() == [("phys", "sci"), ("unmapped", "unmapped"), ("phys", "sci")]
    assert out.get_column("gpu_model").to_list() == ["H100", "H100", "A100 3g.40gb"]
    assert out.get_column("gpu_hours").to_list() == pytest.approx([7.0, 7.0, 3.0])


def test_output_schema_is_exact() -> None:
    assert fct([job("9", datetime(2024, 3, 10), None)], []).schema == pl.Schema(SCHEMA)
    assert fct([], []).schema == pl.Schema(SCHEMA)
