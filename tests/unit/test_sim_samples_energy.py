"""Simulated DCGM samples: the energy counter follows power over a month, resets on reboots once a period."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import polars as pl
import pytest

from simulate.samples import COUNTER_EPOCH_US, DAY_US, REBOOT_PERIOD_US, generate_day
from tests.unit.sim_samples_cases import DAY, allocations, at, inventory


def month_allocations() -> pl.DataFrame:
    """Every other day, a job per GPU from 03:00+ to 05:00 the next day (crossing midnight)."""
    kinds = ["dense", "bursty", "hog", "starved"]
    return allocations(
        [
            (f"{d}-{g}", f"n{g // 4:02d}", g % 4, None, at(24 * d + 3 + g), at(24 * d + 29), kinds[g % 4], 100 * d + g)
            for d in range(0, 30, 2)
            for g in range(8)
        ]
    )


@pytest.fixture(scope="module")
def month() -> list[pl.DataFrame]:
    """Thirty days of 8 GPUs at a 10-minute step."""
    inv, alloc = inventory(["H100", "H200"]), month_allocations()
    return [generate_day(inv, alloc, DAY + timedelta(days=d), 600, 21, "t") for d in range(30)]


def test_energy_counter_follows_power_with_one_reset_a_month(month: list[pl.DataFrame]) -> None:
    frame = pl.concat(month).sort("hostname", "gpu", "ts")
    steps = frame.with_columns(
        diff=pl.col("energy_mj").diff().over("hostname", "gpu"),
        expected=(pl.col("power_w").shift() * 600 * 1000).over("hostname", "gpu"),
    ).drop_nulls("diff")
    resets = steps.filter(pl.col("diff") < 0)
    assert resets.height == 1
    assert resets["energy_mj"].item() < 700 * 600 * 1000  # back to about zero
    ratio = steps.filter(pl.col("diff") >= 0).select(pl.col("diff") / pl.col("expected"))
    assert ratio.min().item() > 0.8 and ratio.max().item() < 1.25
    midnight = steps.filter((pl.col("ts").dt.hour() == 0) & (pl.col("ts").dt.minute() == 0) & (pl.col("diff") >= 0))
    assert midnight.height == 8 * 29 and (midnight["diff"] > 0).all()


def test_energy_day_alone_equals_day_in_sequence(month: list[pl.DataFrame]) -> None:
    alone = generate_day(inventory(["H100", "H200"]), month_allocations(), DAY + timedelta(days=17), 600, 21, "t")
    assert alone.equals(month[17])


def test_reboots_happen_once_per_period() -> None:
    from simulate.samples import make_fleet, reboots

    fleet = make_fleet(inventory(["H100", "H100"], mig_gpus=1), seed=3)
    times, insts = reboots(fleet, 3, COUNTER_EPOCH_US + 12 * REBOOT_PERIOD_US)
    assert np.all(np.diff(times) == REBOOT_PERIOD_US) and times.size == 12
    assert fleet.whole[insts].all()
    for start in COUNTER_EPOCH_US + np.arange(0, 11 * REBOOT_PERIOD_US, 7 * DAY_US):  # any 30 days: one reboot
        assert ((times >= start) & (times < start + REBOOT_PERIOD_US)).sum() == 1
