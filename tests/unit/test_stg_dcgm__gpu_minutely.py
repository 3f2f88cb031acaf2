"""stg_dcgm__gpu_minutely: per GPU x job x pod x minute means, maxima and coverage (polars and SQL)."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from contracts.schemas import RAW_SAMPLE_SCHEMA
from tests.fixtures import h200
from transforms.staging.stg_dcgm__gpu_minutely import (
    SCHEMA,
    expected_per_minute,
    stg_dcgm__gpu_minutely,
    stg_dcgm__gpu_minutely_sql,
)
from warehouse import connect, read_frame, replace_partition

DAY = date(2024, 3, 10)
T0 = datetime(2024, 3, 10, 10, 0)


def sample(seconds: int, **values) -> dict:
    """A RAW_SAMPLE_SCHEMA row ``seconds`` after 10:00 on GPU 0 of n1, job "7"."""
    row = {c: None for c in RAW_SAMPLE_SCHEMA}
    row.update(
        cluster="c1",
        day=DAY,
        ts=T0 + timedelta(seconds=seconds),
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


def frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=RAW_SAMPLE_SCHEMA)


def minutely(rows: list[dict], step_seconds: int = 15) -> pl.DataFrame:
    lazy = stg_dcgm__gpu_minutely(frame(rows).lazy(), step_seconds)
    assert isinstance(lazy, pl.LazyFrame)
    out = lazy.collect()
    assert out.schema == pl.Schema(SCHEMA)
    return out


def sql_minutely(rows: pl.DataFrame, step_seconds: int) -> pl.DataFrame:
    """The SQL implementation, run over the rows landed in an in-memory warehouse."""
    with connect(":memory:") as conn:
        for (cluster, day), part in rows.group_by(["cluster", "day"]):
            replace_partition(conn, "raw.dcgm_samples", part, {"cluster": cluster, "day": day})
        parts = []
        for cluster, day in rows.select("cluster", "day").unique().sort("cluster", "day").iter_rows():
            text, params = stg_dcgm__gpu_minutely_sql(cluster, day, step_seconds)
            parts.append(read_frame(conn, text, params))
    return pl.concat(parts)


def test_minute_means_maxima_and_best_signal_per_sample() -> None:
    out = minutely(
        [
            sample(0, sm_active=0.2, gr_engine_active=0.3, gpu_util=50.0, fb_used_mib=100.0, power_w=200.0),
            sample(15, sm_active=0.4, gr_engine_active=0.5, gpu_util=70.0, fb_used_mib=300.0, power_w=None),
            sample(30, gr_engine_active=0.9, gpu_util=10.0, fb_used_mib=200.0, power_w=400.0),  # no sm: gr
            sample(45, gpu_util=80.0, tensor_active=0.25),  # only gpu_util: 0.8
            sample(60, sm_active=0.1),  # the next minute
        ]
    )
    assert out.get_column("minute").to_list() == [T0, T0 + timedelta(minutes=1)]
    row = out.row(0, named=True)
    assert (row["n_samples"], row["expected_samples"], row["coverage"]) == (4, 4, 1.0)
    assert (row["sm_active_mean"], row["sm_active_max"]) == (pytest.approx(0.3), 0.4)
    assert (row["gr_engine_active_mean"], row["gr_engine_active_max"]) == (pytest.approx(1.7 / 3), 0.9)
    assert (row["gpu_util_mean"], row["gpu_util_max"]) == (pytest.approx(0.525), 0.8)
    assert row["best_signal_mean"] == pytest.approx((0.2 + 0.4 + 0.9 + 0.8) / 4)
    assert (row["tensor_active_mean"], row["dram_active_mean"], row["dram_active_max"]) == (0.25, None, None)
    assert (row["fb_used_mib_mean"], row["fb_used_mib_max"], row["power_w_mean"]) == (200.0, 300.0, 300.0)
    assert out.row(1, named=True)["coverage"] == 0.25


def test_a_scrape_gap_lowers_coverage_and_invents_no_activity() -> None:
    # 30 minutes at 15 s, busy throughout, with nothing scraped from 10:09:30 to 10:19:30
    gap = range(9 * 60 + 30, 19 * 60 + 30)
    rows = [sample(s, sm_active=0.8) for s in range(0, 30 * 60, 15) if s not in gap]
    out = minutely(rows)
    minutes = out.get_column("minute").to_list()
    assert len(minutes) == 30 - 9  # minutes 10..18 have no row at all
    assert all(not (T0 + timedelta(minutes=10) <= m < T0 + timedelta(minutes=19)) for m in minutes)
    coverage = dict(zip(minutes, out.get_column("coverage").to_list(), strict=True))
    assert coverage[T0 + timedelta(minutes=9)] == 0.5
    assert coverage[T0 + timedelta(minutes=19)] == 0.5
    assert out.get_column("n_samples").sum() == len(rows)
    assert set(out.get_column("best_signal_mean").to_list()) == {0.8}


def test_coverage_is_capped_and_expected_is_at_least_one() -> None:
    assert [expected_per_minute(s) for s in (1, 15, 30, 60, 300)] == [60, 4, 2, 1, 1]
    with pytest.raises(ValueError):
        expected_per_minute(0)
    doubled = [sample(s, sm_active=0.5) for s in (0, 0, 30, 30, 45)]  # more rows than expected
    assert minutely(doubled, step_seconds=30).select("n_samples", "expected_samples", "coverage").row(0) == (5, 2, 1.0)
    assert minutely([sample(0, sm_active=0.5)], step_seconds=300).get_column("coverage").to_list() == [1.0]


def test_mig_instances_jobs_and_pods_are_separate_rows() -> None:
    out = minutely(
        [
            sample(0, sm_active=0.5, gpu_util=90.0, power_w=300.0),
            sample(0, gpu_i_id=1, gpu_i_profile="3g.40gb", sm_active=0.25),  # MIG: no gpu_util/power
            sample(0, gpu_i_id=2, gpu_i_profile="3g.40gb", sm_active=0.75),
            sample(15, hpc_job="8", sm_active=0.1),
            sample(15, hpc_job=None, pod="train-0", namespace="ml", sm_active=0.3),
        ]
    )
    keys = out.select("gpu_i_id", "hpc_job", "pod", "sm_active_mean", "gpu_util_mean", "power_w_mean").rows()
    assert keys == [
        (None, None, "train-0", 0.3, None, None),
        (None, "7", None, 0.5, 0.9, 300.0),
        (None, "8", None, 0.1, None, None),
        (1, "7", None, 0.25, None, None),
        (2, "7", None, 0.75, None, None),
    ]
    assert out.get_column("n_samples").to_list() == [1] * 5


def test_sql_matches_polars_on_mixed_rows() -> None:
    rows = [
        sample(s, sm_active=(s % 7) / 7, gpu_util=float(s % 100), fb_used_mib=float(s), power_w=100.0 + s)
        for s in range(0, 3 * 60, 15)
    ]
    rows += [sample(s, gpu_i_id=1, gpu_i_profile="1g.10gb", gr_engine_active=0.5, hpc_job=None) for s in (5, 20, 200)]
    rows += [sample(s, cluster="c2", hostname="m1", pod="p", namespace="ns", dram_active=0.1) for s in (0, 61)]
    rows += [sample(30)]  # no signal at all
    expected = minutely(rows)
    assert_frame_equal(sql_minutely(frame(rows), 15), expected, check_exact=False)


def test_sql_matches_polars_on_the_h200_trace() -> None:
    samples = h200.raw_samples()
    expected = stg_dcgm__gpu_minutely(samples.lazy(), h200.STEP_SECONDS).collect()
    assert expected.get_column("n_samples").sum() == samples.height
    assert set(expected.get_column("expected_samples").to_list()) == {60}
    assert_frame_equal(sql_minutely(samples, h200.STEP_SECONDS), expected, check_exact=False)
