"""screen_samples: MIG device fields move to one device row per GPU and timestamp."""

from __future__ import annotations

from datetime import date, timedelta

import polars as pl

from tests.unit.dcgm_quality_cases import T0, mig, q_rows, sample, screen


def test_mig_device_fields_move_to_one_device_row_per_gpu_and_ts() -> None:
    rows = [mig(s, gi, sm_active=0.1 * gi, power_w=300.0, energy_mj=5e6 + s) for s in (0, 15) for gi in (1, 2)]
    result = screen(rows)
    cols = [
        "ts",
        "gpu",
        "uuid",
        "gpu_i_id",
        "gpu_i_profile",
        "hpc_job",
        "sm_active",
        "power_w",
        "energy_mj",
        "extra_labels",
    ]
    assert result.clean.select(cols).rows() == [  # instance rows as they came, then the device rows
        (T0, 1, "GPU-m", 1, "3g.40gb", "101", 0.1, None, None, "{}"),
        (T0 + timedelta(seconds=15), 1, "GPU-m", 1, "3g.40gb", "101", 0.1, None, None, "{}"),
        (T0, 1, "GPU-m", 2, "3g.40gb", "102", 0.2, None, None, "{}"),
        (T0 + timedelta(seconds=15), 1, "GPU-m", 2, "3g.40gb", "102", 0.2, None, None, "{}"),
        (T0, 1, "GPU-m", None, None, None, None, 300.0, 5e6, "{}"),
        (T0 + timedelta(seconds=15), 1, "GPU-m", None, None, None, None, 300.0, 5e6 + 15, "{}"),
    ]
    device = result.clean.filter(pl.col("gpu_i_id").is_null()).row(0, named=True)
    assert (device["hostname"], device["model_name"], device["pci_bus_id"], device["device"], device["cluster"]) == (
        "n1",
        "NVIDIA H100 80GB HBM3",
        "0:1b",
        "nvidia0",
        "c1",
    )
    assert device["pod"] is None and device["day"] == date(2026, 3, 1)
    c = result.counts
    assert (c["mig_device_rows"], c["mig_device_values_moved"], c["mig_device_field_disagreement"]) == (2, 8, 0)
    assert result.quarantine.height == 0
    # the GPU's power is counted once per timestamp, not once per instance
    assert result.clean["power_w"].sum() == 600.0


def test_mig_instances_that_disagree_keep_the_max_and_are_counted() -> None:
    rows = [mig(0, 1, power_w=300.0, gpu_util=40.0), mig(0, 2, power_w=310.0, gpu_util=40.0), mig(0, 3, power_w=None)]
    result = screen(rows)
    device = result.clean.filter(pl.col("gpu_i_id").is_null())
    assert device.select("power_w", "gpu_util").rows() == [(310.0, 40.0)]
    assert result.counts["mig_device_field_disagreement"] == 1


def test_a_sentinel_on_one_instance_is_quarantined_and_the_device_row_uses_the_others() -> None:
    result = screen([mig(0, 1, power_w=2147483632.0), mig(0, 2, power_w=300.0)])
    assert result.clean.filter(pl.col("gpu_i_id").is_null())["power_w"].to_list() == [300.0]
    assert q_rows(result) == [
        (
            "hostname=n1 gpu=1 uuid=GPU-m gpu_i_id=1 hpc_job=101 field=power_w",
            "DCGM blank sentinel 2147483632 (INT32 BLANK)",
            1,
        )
    ]
    assert result.counts["mig_device_field_disagreement"] == 0


def test_an_existing_whole_gpu_row_gets_the_device_values_instead_of_a_new_row() -> None:
    parent = sample(0, gpu=1, uuid="GPU-m", hpc_job=None, power_w=None, gpu_util=55.0)
    result = screen([parent, mig(0, 1, power_w=300.0, gpu_util=10.0), mig(0, 2, power_w=300.0, gpu_util=10.0)])
    assert result.clean.height == 3 and result.counts["mig_device_rows"] == 0
    whole = result.clean.filter(pl.col("gpu_i_id").is_null())
    assert whole.select("power_w", "gpu_util").rows() == [(300.0, 55.0)]  # its own value wins, its null is filled
    assert result.counts["mig_parent_rows_filled"] == 1


def test_mig_gpu_without_uuid_is_keyed_by_host_and_gpu() -> None:
    rows = [
        mig(0, 1, uuid=None, power_w=300.0),
        mig(0, 2, uuid=None, power_w=300.0),
        mig(0, 1, uuid=None, hostname="n2", power_w=250.0),
    ]
    result = screen(rows)
    device = result.clean.filter(pl.col("gpu_i_id").is_null()).select("hostname", "power_w").rows()
    assert device == [("n1", 300.0), ("n2", 250.0)]
