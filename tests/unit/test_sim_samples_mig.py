"""Simulated MIG GPUs report power and energy like dcgm-exporter: the whole GPU's values repeated
on every instance (NVIDIA/dcgm-exporter#257), no GPU_UTIL (#105, #216)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import polars as pl
import pytest

from config import MIG_SLICES_PER_GPU, parse_mig_profile
from simulate import gauges
from simulate.hardware import MIG_GI_IDS, MIG_LAYOUT, MIG_MEMORY_MIB
from simulate.samples import (
    DAY_US,
    US,
    Fleet,
    assign_runs,
    chunks,
    day_start_us,
    energy_counter_mj,
    generate_day,
    make_fleet,
    make_runs,
    reboots,
    sample_values,
)
from tests.unit.sim_samples_cases import DAY, allocations, at, inventory

A100_LIMIT_W = 400.0
STEP = 300
DEVICE = ["power_w", "energy_mj"]
INSTANCE = ["hostname", "gpu", "gpu_i_id"]


def mig_inventory() -> pl.DataFrame:
    """Two H100s, then two A100s split 3g + 2g + 1g + 1g (all 7 slices) on host m00."""
    whole = inventory(["H100"]).filter(pl.col("gpu") < 2).cast({"gpu_i_profile": pl.String})
    first = whole.row(0, named=True)
    rows = [
        first
        | {
            "hostname": "m00",
            "gpu": gpu,
            "uuid": f"GPU-m00-{gpu}",
            "model_name": "NVIDIA A100-SXM4-80GB",
            "gpu_model": "A100",
            "memory_mib": MIG_MEMORY_MIB[profile],
            "gpu_i_id": gi,
            "gpu_i_profile": profile,
        }
        for gpu in range(2)
        for gi, profile in zip(MIG_GI_IDS, MIG_LAYOUT, strict=True)
    ]
    return pl.concat([whole, pl.DataFrame(rows, schema=whole.schema)])


def mig_allocations() -> pl.DataFrame:
    """GPU 0: a dense 3g job, a hog on 2g, a bursty 1g, one 1g idle; GPU 1: every slice dense
    across midnight into day 2; the H100s run jobs too."""
    return allocations(
        [
            ("1", "m00", 0, 1, at(1), at(9), "dense", 11),
            ("2", "m00", 0, 5, at(2), at(5), "hog", 12),
            ("3", "m00", 0, 13, at(3), at(4), "bursty", 13),
            *[(f"4{gi}", "m00", 1, gi, at(6), at(30), "dense", 20 + gi) for gi in MIG_GI_IDS],
            ("5", "n00", 0, None, at(2), at(26), "dense", 31),
            ("6", "n00", 1, None, at(7), at(8), "starved", 32),
        ]
    )


@pytest.fixture(scope="module")
def two_days() -> list[pl.DataFrame]:
    inv, alloc = mig_inventory(), mig_allocations()
    return [generate_day(inv, alloc, DAY + timedelta(days=d), STEP, 5, "t") for d in range(2)]


def mig_rows(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("gpu_i_id").is_not_null())


def test_instances_of_a_mig_gpu_carry_identical_power_and_energy(two_days: list[pl.DataFrame]) -> None:
    mig = mig_rows(pl.concat(two_days))
    per_gpu = mig.group_by("hostname", "gpu", "ts").agg(pl.len(), *(pl.col(c).n_unique() for c in DEVICE))
    assert per_gpu.height == 2 * 2 * 288 and (per_gpu["len"] == 4).all()
    assert (per_gpu["power_w"] == 1).all() and (per_gpu["energy_mj"] == 1).all()
    assert mig.select(pl.col(DEVICE).null_count()).sum_horizontal().item() == 0
    assert mig["gpu_util"].null_count() == mig.height  # GPU_UTIL stays unreported on instances
    assert pl.concat(two_days).filter(pl.col("gpu_i_id").is_null())["gpu_util"].null_count() == 0


def test_gpu_power_is_idle_plus_each_instances_share_above_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The power written on the instances against their own (spied) powers, weighted by profile slices."""
    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    real = gauges.mig_gpu_power

    def spy(fleet: Fleet, power: np.ndarray) -> np.ndarray:
        seen.append((fleet.frame["gpu_i_profile"].to_numpy(), fleet.idle_w.copy(), power.copy()))
        return real(fleet, power)

    monkeypatch.setattr(gauges, "mig_gpu_power", spy)
    frame = generate_day(mig_inventory(), mig_allocations(), DAY, STEP, 5, "t")
    ((profiles, idle_w, power),) = seen
    mig = np.flatnonzero([p is not None for p in profiles])
    share = np.array([parse_mig_profile(p).slices / MIG_SLICES_PER_GPU for p in profiles[mig]])
    idle = idle_w[mig].reshape(2, 4)
    assert (idle == idle[:, :1]).all()  # one idle power per GPU
    above = (share[:, None] * (power[mig].astype(np.float64) - idle_w[mig, None])).reshape(2, 4, -1)
    expected = np.minimum(idle[:, 0, None] + above.sum(axis=1), A100_LIMIT_W)
    written = mig_rows(frame).sort([*INSTANCE, "ts"])["power_w"].to_numpy().reshape(2, 4, -1)
    assert np.abs(written - expected[:, None, :]).max() <= 0.0005 + 1e-9  # quantized to mW
    assert written.max() <= A100_LIMIT_W and written[1, :, 7 * 12 :].mean() > 0.85 * A100_LIMIT_W  # all dense
    busy_3g = frame.filter(pl.col("hpc_job") == "1")["power_w"].mean()
    assert idle[0, 0] + 0.3 * (A100_LIMIT_W - idle[0, 0]) < busy_3g < idle[0, 0] + 0.6 * (A100_LIMIT_W - idle[0, 0])


def test_mig_energy_counter_follows_gpu_power(two_days: list[pl.DataFrame]) -> None:
    steps = (
        mig_rows(pl.concat(two_days))
        .sort(*INSTANCE, "ts")
        .with_columns(
            diff=pl.col("energy_mj").diff().over(INSTANCE),
            expected=(pl.col("power_w").shift() * STEP * 1000).over(INSTANCE),
        )
        .drop_nulls("diff")
    )
    ratio = steps.select(pl.col("diff") / pl.col("expected"))
    assert ratio.min().item() > 0.9 and ratio.max().item() < 1.1  # positive: no reset on these days
    midnight = steps.filter(pl.col("ts") == at(24))
    assert midnight.height == 8 and (midnight["diff"] > 0).all()  # continuous across days
    assert (steps["energy_mj"] == steps["energy_mj"].floor()).all() and steps["energy_mj"].min() > 0


def test_mig_day_alone_equals_day_in_sequence(two_days: list[pl.DataFrame]) -> None:
    alone = generate_day(mig_inventory(), mig_allocations(), DAY + timedelta(days=1), STEP, 5, "t")
    assert alone.equals(two_days[1])


def test_a_reboot_resets_the_whole_mig_gpu_only() -> None:
    inv, alloc, ds = mig_inventory(), mig_allocations(), day_start_us(DAY)
    fleet = make_fleet(inv, 5)
    runs = make_runs(alloc, fleet)
    grid = assign_runs(runs, fleet.frame.height, ds, STEP * US, 288)
    power = sample_values(fleet, runs, grid, ds, STEP * US, np.random.default_rng(1))["power_w"]
    no_boot = energy_counter_mj(fleet, runs, power, ds, STEP * US, (np.zeros(0, np.int64),) * 2, 5)
    inst = fleet.frame.with_row_index().filter((pl.col("gpu") == 1) & (pl.col("gpu_i_id") == 5))["index"].item()
    when = ds + 12 * 3600 * US + 100 * US
    booted = energy_counter_mj(fleet, runs, power, ds, STEP * US, (np.array([when]), np.array([inst])), 5)
    gpu1 = fleet.gpu == fleet.gpu[inst]
    assert gpu1.sum() == 4 and (booted[gpu1] == booted[gpu1][:1]).all()
    assert np.array_equal(booted[~gpu1], no_boot[~gpu1])
    k = 12 * 3600 // STEP + 1  # first sample after the reboot
    assert booted[inst, k] < A100_LIMIT_W * STEP * 1000 < booted[inst, k - 1]
    assert np.all(np.diff(booted[inst, :k]) > 0) and np.all(np.diff(booted[inst, k:]) > 0)
    assert booted[inst, 0] == no_boot[inst, 0] and booted[inst, k - 1] < no_boot[inst, k - 1]


def test_reboots_pick_whole_gpus() -> None:
    fleet = make_fleet(mig_inventory(), 5)
    _, insts = reboots(fleet, 5, day_start_us(DAY) + 400 * DAY_US)
    assert insts.size > 10 and fleet.whole[insts].all()


def test_chunks_never_split_a_gpus_instances() -> None:
    fleet = make_fleet(mig_inventory(), 5)  # rows: m00 gpu0 x4, gpu1 x4, n00 gpu0, gpu1
    assert chunks(fleet, 3) == [(0, 4), (4, 8), (8, 10)]
    assert chunks(fleet, 64) == [(0, 10)] and chunks(fleet, 1) == [(0, 4), (4, 8), (8, 9), (9, 10)]
    assert chunks(make_fleet(mig_inventory().head(0), 5), 64) == []


def test_small_chunks_keep_the_gpu_values_together(monkeypatch: pytest.MonkeyPatch) -> None:
    from simulate import samples

    monkeypatch.setattr(samples, "CHUNK_INSTANCES", 3)
    mig = mig_rows(generate_day(mig_inventory(), mig_allocations(), DAY, 3600, 5, "t"))
    per_gpu = mig.group_by("hostname", "gpu", "ts").agg(pl.col(DEVICE).n_unique())
    assert (per_gpu["power_w"] == 1).all() and (per_gpu["energy_mj"] == 1).all()


def test_screening_moves_the_repeated_values_to_one_device_row_per_gpu(two_days: list[pl.DataFrame]) -> None:
    """The pipeline's MIG device-field path on simulated output: nothing disagrees, nothing quarantined."""
    from transforms.helpers.dcgm_quality import screen_samples

    result = screen_samples(two_days[0], DAY.isoformat())
    c = result.counts
    assert (c["mig_device_rows"], c["mig_device_values_moved"], c["mig_device_field_disagreement"]) == (
        2 * 288,
        8 * 288 * 2,
        0,
    )
    assert c["quarantined_values"] == 0 and c["mig_parent_rows_filled"] == 0
    device = result.clean.filter((pl.col("hostname") == "m00") & pl.col("gpu_i_id").is_null()).sort("gpu", "ts")
    expected = mig_rows(two_days[0]).filter(pl.col("gpu_i_id") == 1).sort("gpu", "ts")
    assert device.select(DEVICE).equals(expected.select(DEVICE)) and device["gpu_util"].null_count() == device.height
