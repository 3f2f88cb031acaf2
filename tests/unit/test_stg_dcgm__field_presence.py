"""stg_dcgm__field_presence: per instance, day and DCGM field: counts, range, flat-zero suspicion."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl

from contracts.schemas import RAW_SAMPLE_SCHEMA, SAMPLE_VALUE_COLUMNS
from tests.fixtures import h200
from transforms.staging.stg_dcgm__field_presence import SCHEMA, presence_summary, stg_dcgm__field_presence

DAY = date(2024, 3, 10)
T0 = datetime(2024, 3, 10, 0, 0)


def sample(minute: int, **values) -> dict:
    row = {c: None for c in RAW_SAMPLE_SCHEMA}
    row.update(
        cluster="c1",
        day=DAY,
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


def presence(rows: list[dict]) -> pl.DataFrame:
    out = stg_dcgm__field_presence(pl.DataFrame(rows, schema=RAW_SAMPLE_SCHEMA).lazy(), DAY)
    assert isinstance(out, pl.DataFrame)
    assert out.schema == pl.Schema(SCHEMA)
    return out


def field(out: pl.DataFrame, name: str, gpu_i_id: int | None = None) -> dict:
    instance = pl.col("gpu_i_id").is_null() if gpu_i_id is None else pl.col("gpu_i_id") == gpu_i_id
    return out.filter(instance & (pl.col("field") == name)).row(0, named=True)


def test_counts_range_and_absent_fields_per_instance() -> None:
    out = presence(
        [
            sample(0, sm_active=0.0, gpu_util=40.0, power_w=300.0),
            sample(1, sm_active=0.5, gpu_util=None, power_w=310.0),
            sample(2, sm_active=0.25, gpu_util=0.0, hpc_job="8"),  # jobs are not a key here
        ]
    )
    assert out.height == len(SAMPLE_VALUE_COLUMNS)  # one instance, every field
    assert out.get_column("day").unique().to_list() == [DAY]
    sm = field(out, "sm_active")
    assert (sm["n_samples"], sm["n_nonzero"], sm["min_value"], sm["max_value"]) == (3, 2, 0.0, 0.5)
    util = field(out, "gpu_util")  # raw units (%)
    assert (util["n_samples"], util["n_nonzero"], util["min_value"], util["max_value"]) == (2, 1, 0.0, 40.0)
    absent = field(out, "dram_active")
    assert (absent["n_samples"], absent["n_nonzero"], absent["min_value"], absent["suspect_flat_zero"]) == (
        0,
        0,
        None,
        False,
    )
    assert not out.get_column("suspect_flat_zero").any()


def test_gr_engine_stuck_at_zero_while_sm_moves_is_suspect() -> None:
    rows = [sample(m, gr_engine_active=0.0, sm_active=0.1 * (m // 15 % 5), gpu_util=50.0) for m in range(0, 1440, 15)]
    out = presence(rows)
    suspects = out.filter("suspect_flat_zero").get_column("field").to_list()
    assert suspects == ["gr_engine_active"]
    assert presence_summary(out)["gr_engine_active"] == {"present": 1, "suspect_flat_zero": 1}


def test_flat_zero_is_not_suspect_when_nothing_moves_or_not_all_day() -> None:
    idle = presence([sample(m, gr_engine_active=0.0, sm_active=0.0, gpu_util=0.0, power_w=60.0) for m in range(10)])
    assert not idle.get_column("suspect_flat_zero").any()  # an idle GPU: power moving is no activity
    once = presence([sample(0, gr_engine_active=0.2, sm_active=0.3), sample(1, gr_engine_active=0.0, sm_active=0.3)])
    assert not once.get_column("suspect_flat_zero").any()  # gr moved once: not stuck


def test_tensor_and_dram_at_zero_are_legitimate_but_can_reveal_another_stuck_field() -> None:
    # the H200 trace's "tiny" job: one-thread kernels, no tensor pipe, no DRAM traffic
    busy = presence(
        [sample(m, sm_active=0.0075, gr_engine_active=0.99, tensor_active=0.0, dram_active=0.0) for m in range(10)]
    )
    assert not busy.get_column("suspect_flat_zero").any()
    stuck = presence([sample(m, gr_engine_active=0.0, tensor_active=0.3, dram_active=0.0) for m in range(10)])
    assert stuck.filter("suspect_flat_zero").get_column("field").to_list() == ["gr_engine_active"]


def test_a_barely_moving_signal_does_not_make_zeros_suspect() -> None:
    # the trace's "hog": memory held, nothing running: GR ~1e-4, SM and GPU_UTIL exactly 0
    rows = [
        sample(m, gr_engine_active=0.00006 * (m % 2), sm_active=0.0, sm_occupancy=0.0, gpu_util=0.0) for m in range(10)
    ]
    assert not presence(rows).get_column("suspect_flat_zero").any()
    lenient = stg_dcgm__field_presence(pl.DataFrame(rows, schema=RAW_SAMPLE_SCHEMA), DAY, moving_min=0.00005)
    assert lenient.filter("suspect_flat_zero").get_column("field").to_list() == [
        "gpu_util",
        "sm_active",
        "sm_occupancy",
    ]
    # gpu_util is in %: 2 % is a move (0.02 as a ratio), 0.5 % is not
    assert (
        presence([sample(m, gpu_util=2.0 * (m % 2), sm_active=0.0) for m in range(4)])
        .get_column("suspect_flat_zero")
        .any()
    )
    assert (
        not presence([sample(m, gpu_util=0.5, sm_active=0.0) for m in range(4)]).get_column("suspect_flat_zero").any()
    )


def test_mig_instances_are_judged_separately() -> None:
    out = presence(
        [
            # device row: the whole-GPU fields (moved there by screening), no profiling fields
            *(sample(m, gpu_util=0.0, power_w=120.0) for m in range(5)),
            # instance 1 works; instance 2 idles with a stuck-looking gr engine but no mover
            *(sample(m, gpu_i_id=1, gpu_i_profile="3g.40gb", sm_active=0.6, gr_engine_active=0.0) for m in range(5)),
            *(sample(m, gpu_i_id=2, gpu_i_profile="3g.40gb", sm_active=0.0, gr_engine_active=0.0) for m in range(5)),
        ]
    )
    assert out.height == 3 * len(SAMPLE_VALUE_COLUMNS)
    suspects = out.filter("suspect_flat_zero").select("gpu_i_id", "field").rows()
    assert suspects == [(1, "gr_engine_active")]
    assert field(out, "gpu_util")["n_samples"] == 5 and field(out, "gpu_util", 1)["n_samples"] == 0
    assert field(out, "gpu_util")["suspect_flat_zero"] is False  # nothing else on the device row moves
    summary = presence_summary(out)
    assert summary["sm_active"] == {"present": 2, "suspect_flat_zero": 0}
    assert summary["gpu_util"]["present"] == 1 and summary["dram_active"]["present"] == 0


def test_real_h200_trace_has_no_suspect_until_gr_engine_is_zeroed() -> None:
    samples = h200.raw_samples()
    day = samples.get_column("day")[0]
    clean = stg_dcgm__field_presence(samples.lazy(), day)
    assert not clean.get_column("suspect_flat_zero").any()
    assert clean.filter(pl.col("n_samples") == samples.height).height == len(SAMPLE_VALUE_COLUMNS)
    broken = stg_dcgm__field_presence(samples.with_columns(gr_engine_active=pl.lit(0.0)).lazy(), day)
    assert broken.filter("suspect_flat_zero").get_column("field").to_list() == ["gr_engine_active"]
