"""generate_day: per-job levels across GPUs and midnight, invalid inputs, idle GPUs and an empty inventory."""

from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest

from contracts.schemas import RAW_SAMPLE_SCHEMA
from simulate import shapes
from simulate.samples import generate_day
from tests.unit.sim_samples_cases import DAY, allocations, at, inventory


def test_jobs_differ_but_gpus_of_one_job_agree() -> None:
    rows = [
        (f"j{node}", f"n{node:02d}", gpu, None, at(0), at(24), "bursty", 50 + node)
        for node in range(6)
        for gpu in range(4)
    ]
    frame = generate_day(inventory(["H100"] * 6), allocations(rows), DAY, 60, 2, "t")
    per_gpu = frame.group_by("hpc_job", "gpu").agg(pl.col("sm_active").mean())
    per_job = per_gpu.group_by("hpc_job").agg(mean=pl.col("sm_active").mean(), spread=pl.col("sm_active").std())
    assert per_job["mean"].std() > 5 * per_job["spread"].max()
    assert per_job["mean"].mean() == pytest.approx(shapes.SHAPES["bursty"].sm_active, rel=0.25)


def test_a_run_keeps_its_level_across_midnight() -> None:
    alloc = allocations([("5", "n00", 0, None, at(12), at(36), "starved", 8)])
    inv = inventory(["H200"])
    days = [generate_day(inv, alloc, d, 60, 4, "t") for d in (DAY, DAY + timedelta(days=1))]
    means = [d.filter(pl.col("hpc_job") == "5")["sm_active"].mean() for d in days]
    assert means[0] == pytest.approx(means[1], rel=0.02)


def test_invalid_inputs_are_rejected() -> None:
    inv = inventory(["H100"])
    overlapping = allocations(
        [("1", "n00", 0, None, at(1), at(3), "dense", 1), ("2", "n00", 0, None, at(2), at(4), "dense", 2)]
    )
    with pytest.raises(ValueError, match="overlapping"):
        generate_day(inv, overlapping, DAY, 30, 1, "t")
    with pytest.raises(ValueError, match="unknown allocation kinds"):
        generate_day(inv, allocations([("1", "n00", 0, None, at(1), at(3), "mystery", 1)]), DAY, 30, 1, "t")
    with pytest.raises(ValueError, match="not in the inventory"):
        generate_day(inv, allocations([("1", "n09", 0, None, at(1), at(3), "dense", 1)]), DAY, 30, 1, "t")
    with pytest.raises(ValueError, match="divide 86400"):
        generate_day(inv, allocations([]), DAY, 7, 1, "t")


def test_gpus_without_jobs_idle_and_an_empty_inventory_gives_an_empty_frame() -> None:
    frame = generate_day(inventory(["A100"], mig_gpus=1), allocations([]), DAY, 300, 1, "t")
    assert frame.height == 6 * 288 and frame["hpc_job"].null_count() == frame.height
    assert frame["sm_active"].max() == 0.0 and frame["power_w"].max() < 0.15 * 400
    empty = generate_day(inventory(["A100"]).clear(), allocations([]), DAY, 300, 1, "t")
    assert empty.height == 0 and empty.schema == pl.Schema(RAW_SAMPLE_SCHEMA)
