"""stg_dcgm__gpu_hourly: sample rollup per GPU x job x hour (sums, counts, maxima, energy)."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl
import pytest

from contracts.schemas import RAW_SAMPLE_SCHEMA
from tests.fixtures import h200
from transforms.staging.stg_dcgm__gpu_hourly import SCHEMA, stg_dcgm__gpu_hourly

T0 = datetime(2024, 3, 10, 10, 0)


def sample(minute: int, **values) -> dict:
    """A RAW_SAMPLE_SCHEMA row ``minute`` minutes after 10:00 on GPU 0 of n1, job "7"."""
    row = {c: None for c in RAW_SAMPLE_SCHEMA}
    row.update(
        cluster="c1",
        day=date(2024, 3, 10),
        ts=T0 + timedelta(minutes=minute),
        hostname="n1",
        gpu=0,
        uuid="GPU-0",
        model_name="NVIDIA H100 80GB HBM3",
        pci_bus_id="0:1",
        device="nvidia0",
        hpc_job="7",
    )
    row.update(values)
    return row


def hourly(rows: list[dict], step_seconds: int = 60) -> pl.DataFrame:
    lazy = stg_dcgm__gpu_hourly(pl.DataFrame(rows, schema=RAW_SAMPLE_SCHEMA).lazy(), step_seconds)
    assert isinstance(lazy, pl.LazyFrame)
    return lazy.collect()


def test_sums_counts_maxima_ignore_nulls_and_gpu_util_becomes_a_ratio() -> None:
    out = hourly(
        [
            sample(0, sm_active=0.5, gpu_util=50.0, fb_used_mib=100.0, power_w=200.0, tensor_active=0.25),
            sample(1, sm_active=None, gpu_util=60.0, fb_used_mib=300.0, power_w=300.0),
            sample(2, sm_active=0.7, gpu_util=None, fb_used_mib=200.0, power_w=None),
        ]
    )
    assert out.schema == pl.Schema(SCHEMA)
    assert out.height == 1
    row = out.row(0, named=True)
    assert (row["hour"], row["first_ts"], row["last_ts"]) == (T0, T0, T0 + timedelta(minutes=2))
    assert (row["n_samples"], row["expected_samples"]) == (3, 60)
    assert (row["sm_active_sum"], row["sm_active_n"], row["sm_active_max"]) == (pytest.approx(1.2), 2, 0.7)
    assert (row["gpu_util_sum"], row["gpu_util_n"], row["gpu_util_max"]) == (pytest.approx(1.1), 2, 0.6)
    assert (row["tensor_active_sum"], row["tensor_active_n"]) == (0.25, 1)
    assert (row["dram_active_sum"], row["dram_active_n"], row["dram_active_max"]) == (0.0, 0, None)
    assert (row["fb_used_mib_max"], row["fb_used_mib_sum"], row["fb_used_mib_n"]) == (300.0, 600.0, 3)
    assert (row["power_w_sum"], row["power_w_n"]) == (500.0, 2)


def test_groups_by_hour_job_and_instance() -> None:
    out = hourly(
        [
            sample(59, sm_active=0.1),
            sample(60, sm_active=0.2),
            sample(61, sm_active=0.3, hpc_job=None),
            sample(61, sm_active=0.4, gpu=1, uuid="GPU-1"),
            sample(62, sm_active=0.5, gpu_i_id=1, gpu_i_profile="3g.40gb"),
        ]
    )
    keys = out.select("gpu", "gpu_i_id", "hpc_job", "hour", "sm_active_sum").rows()
    hour10, hour11 = T0, T0 + timedelta(hours=1)
    assert keys == [
        (0, None, "7", hour10, 0.1),
        (0, None, None, hour11, 0.3),
        (0, None, "7", hour11, 0.2),
        (0, 1, "7", hour11, 0.5),
        (1, None, "7", hour11, 0.4),
    ]


def test_energy_increments_with_reset_and_cross_hour_step_in_the_later_hour() -> None:
    energies = {58: 1000.0, 59: 1500.0, 60: 1700.0, 61: 200.0, 62: 700.0, 63: None, 64: 900.0}
    rows = [sample(m, energy_mj=e) for m, e in energies.items()]
    # another GPU interleaved in time must not be mixed into GPU 0's counter
    rows += [sample(m, gpu=1, uuid="GPU-1", energy_mj=10.0 * m) for m in energies]
    out = hourly(rows).filter(pl.col("gpu") == 0)
    # 10:00 hour: 1500-1000 (the first sample has no predecessor)
    # 11:00 hour: 1700-1500 (crosses the hour) + 200 (reset) + 500 + 200 (across the null)
    assert out.get_column("energy_delta_mj").to_list() == [500.0, 1100.0]
    gpu1 = hourly(rows).filter(pl.col("gpu") == 1)
    assert gpu1.get_column("energy_delta_mj").to_list() == [10.0, 50.0]


def test_energy_is_null_not_zero_without_a_counter() -> None:
    out = hourly([sample(0, gpu_i_id=1, sm_active=0.5), sample(1, gpu_i_id=1, sm_active=0.5)])
    assert out.get_column("energy_delta_mj").to_list() == [None]


def test_zero_samples_use_the_best_signal_present() -> None:
    out = hourly(
        [
            sample(0, sm_active=0.005, gr_engine_active=0.9, gpu_util=90.0),  # sm says idle
            sample(1, sm_active=0.5, gr_engine_active=0.0),  # sm says busy
            sample(2, gr_engine_active=0.2, gpu_util=0.0),  # no sm: gr says busy
            sample(3, gpu_util=0.5),  # only gpu_util: 0.5 % = 0.005
            sample(4, gpu_util=2.0),  # 2 % = 0.02: busy
            sample(5),  # no signal at all: not counted as zero
        ]
    )
    assert out.select("n_samples", "zero_samples").row(0) == (6, 2)


def test_zero_threshold_is_a_parameter() -> None:
    rows = [sample(0, sm_active=0.03), sample(1, sm_active=0.06)]
    lazy = pl.DataFrame(rows, schema=RAW_SAMPLE_SCHEMA).lazy()
    assert stg_dcgm__gpu_hourly(lazy, 60, zero_threshold=0.05).collect().get_column("zero_samples").to_list() == [1]


def test_hours_aggregate_to_the_same_totals_as_the_samples() -> None:
    samples = h200.raw_samples()
    out = stg_dcgm__gpu_hourly(samples.lazy(), h200.STEP_SECONDS).collect()
    assert out.get_column("n_samples").sum() == samples.height
    assert out.get_column("sm_active_sum").sum() == pytest.approx(samples.get_column("sm_active").sum())
    assert out.get_column("gpu_util_sum").sum() == pytest.approx(samples.get_column("gpu_util").sum() / 100)
    energy = samples.get_column("energy_mj")
    assert out.get_column("energy_delta_mj").sum() == pytest.approx(energy[-1] - energy[0])


def test_h200_trace_per_job_rollup_matches_the_csv() -> None:
    csv = h200.samples_csv().with_columns(pl.col("energy_mj").shift(1).alias("_prev_energy"))
    expected = (
        csv.drop_nulls("job_id")
        .group_by("job_id")
        .agg(
            pl.len().alias("n_samples"),
            (pl.col("gpm_sm_util").sum() / 100).alias("sm_active_sum"),
            (pl.col("gpu_util").sum() / 100).alias("gpu_util_sum"),
            (pl.col("fb_used_bytes").max() / 2**20).alias("fb_used_mib_max"),
            (pl.col("energy_mj").last() - pl.col("_prev_energy").first()).alias("energy_delta_mj"),
        )
        .sort("job_id")
    )
    out = stg_dcgm__gpu_hourly(h200.raw_samples().lazy(), h200.STEP_SECONDS).collect()
    got = out.drop_nulls("hpc_job").sort("hpc_job")
    # the whole trace lies inside one clock hour, so there is one row per job
    assert got.get_column("hpc_job").to_list() == expected.get_column("job_id").to_list()
    assert got.get_column("expected_samples").unique().to_list() == [3600]
    for column in ("n_samples", "sm_active_sum", "gpu_util_sum", "fb_used_mib_max", "energy_delta_mj"):
        assert got.get_column(column).to_list() == pytest.approx(expected.get_column(column).to_list()), column


def test_coverage_counts_present_samples_and_a_gap_invents_nothing() -> None:
    # an hour at 60 s with a 10-minute scrape gap (10:20-10:29): 50 of 60 samples
    rows = [sample(m, sm_active=0.5) for m in range(60) if not 20 <= m < 30]
    row = hourly(rows).row(0, named=True)
    assert (row["n_samples"], row["expected_samples"]) == (50, 60)
    assert row["coverage"] == pytest.approx(50 / 60)
    assert (row["sm_active_sum"], row["sm_active_n"]) == (pytest.approx(25.0), 50)


def test_coverage_is_capped_at_one_and_per_job() -> None:
    rows = [sample(m, sm_active=0.5) for m in range(60)] + [sample(m, hpc_job="8") for m in range(30)]
    rows += [sample(59, sm_active=0.5)]  # a duplicate: more rows than expected
    out = hourly(rows)
    assert out.select("hpc_job", "n_samples", "coverage").rows() == [("7", 61, 1.0), ("8", 30, 0.5)]


def test_coverage_is_null_when_the_step_exceeds_an_hour() -> None:
    out = hourly([sample(0, sm_active=0.5)], step_seconds=7200)
    assert out.select("expected_samples", "coverage").row(0) == (0, None)
