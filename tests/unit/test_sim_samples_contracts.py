"""generate_day contracts on a mixed day: schema, time grid, job assignment, init phase, ranges, MIG, seeds."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import numpy as np
import polars as pl
import pytest

from contracts.schemas import RAW_SAMPLE_SCHEMA
from simulate import shapes
from simulate.samples import generate_day
from tests.unit.sim_samples_cases import DAY, MIDNIGHT, MODELS, allocations, at, inventory


@pytest.fixture(scope="module")
def mixed_day() -> tuple[pl.DataFrame, pl.DataFrame]:
    """H100 + A100 nodes and two MIG'd A100s; jobs of every kind incl. one on a MIG slice."""
    alloc = allocations(
        [
            ("10", "n00", 0, None, at(0, 15), at(3), "dense", 1),  # start on the grid
            ("11", "n00", 0, None, at(3), at(5, 10), "bursty", 2),  # starts where 10 ends
            ("12", "n00", 1, None, at(-5), at(30), "idle_tail", 3),  # spans the whole day
            ("13", "n01", 2, None, at(2), at(12), "idle_tail", 4),
            ("14", "n01", 3, None, at(6), at(7), "idle", 5),
            ("15", "mig00", 1, 2, at(1), at(9), "dense", 6),
            ("16", "n00", 2, None, at(4), at(4, 20), "tiny", 7),  # one sample: no init phase
        ]
    )
    return generate_day(inventory(["H100", "A100"], mig_gpus=2), alloc, DAY, 30, 11, "t"), alloc


def test_schema_order_and_sorting(mixed_day: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    frame, _ = mixed_day
    assert frame.schema == pl.Schema(RAW_SAMPLE_SCHEMA)
    keys = ["hostname", "gpu", "gpu_i_id", "ts"]
    assert frame.select(keys).equals(frame.select(keys).sort(keys, nulls_last=False))
    assert frame["cluster"].unique().to_list() == ["t"] and frame["day"].unique().to_list() == [DAY]


def test_every_instance_has_every_step(mixed_day: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    frame, _ = mixed_day
    grid = pl.datetime_range(MIDNIGHT, at(24), timedelta(seconds=30), closed="left", eager=True)
    per_instance = frame.group_by("hostname", "gpu", "gpu_i_id").agg(pl.col("ts").sort())
    assert per_instance.height == 8 + 4
    for ts in per_instance["ts"]:
        assert ts.equals(grid.alias("ts"))


def test_job_assignment_start_inclusive_end_exclusive(mixed_day: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    frame, _ = mixed_day
    gpu0 = frame.filter((pl.col("hostname") == "n00") & (pl.col("gpu") == 0))
    job_at = dict(zip(gpu0["ts"].to_list(), gpu0["hpc_job"].to_list(), strict=True))
    assert job_at[at(0)] is None and job_at[at(0, 30)] == "10"  # starts 00:00:15, off the grid
    assert job_at[at(3) - timedelta(seconds=30)] == "10" and job_at[at(3)] == "11"  # end exclusive, start inclusive
    assert job_at[at(5, 0)] == "11" and job_at[at(5, 30)] is None  # ends 5:00:10: last sample 5:00:00
    assert frame.filter(pl.col("hpc_job") == "12").height == 2880
    assert frame.filter(pl.col("hpc_job") == "16").height == 1


def test_cuda_init_phase_then_activity(mixed_day: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    frame, _ = mixed_day
    job = frame.filter(pl.col("hpc_job") == "11").sort("ts")
    first, second = job.row(0, named=True), job.row(1, named=True)
    baseline = round(81559 * shapes.BASELINE_FB_FRAC)
    assert (first["sm_active"], first["gpu_util"], first["fb_used_mib"]) == (0.0, 0.0, baseline)
    assert second["sm_active"] > 0.05 and second["fb_used_mib"] > baseline
    one_sample = frame.filter(pl.col("hpc_job") == "16").row(0, named=True)
    assert one_sample["gr_engine_active"] > 0.9  # too short for an init phase


def test_init_spans_five_seconds_at_one_second_steps() -> None:
    alloc = allocations([("1", "n00", 0, None, at(1), at(1, 60), "dense", 9)])
    job = generate_day(inventory(["H200"]), alloc, DAY, 1, 1, "t").filter(pl.col("hpc_job") == "1").sort("ts")
    assert job["sm_active"].head(5).to_list() == [0.0] * 5 and job["sm_active"][5] > 0.9


def test_idle_tail_holds_memory_without_activity(mixed_day: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    frame, _ = mixed_day
    job = frame.filter(pl.col("hpc_job") == "13").sort("ts")  # 10 h run: dense, then a 2-5 h tail
    busy = job["sm_active"].to_numpy() > 0.5
    tail_starts = np.flatnonzero(busy)[-1] + 1
    assert 2.0 - 1 / 120 <= (busy.size - tail_starts) * 30 / 3600 <= 5.0 + 1 / 120
    assert busy[1:tail_starts].all() and not busy[tail_starts:].any()
    assert job["fb_used_mib"].tail(10).min() == job["fb_used_mib"][5] > round(81920 * shapes.BASELINE_FB_FRAC)
    assert job["power_w"].tail(10).max() < 0.25 * 400


def test_value_ranges_and_memory_accounting(mixed_day: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    frame, _ = mixed_day
    ratios = ["gr_engine_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active"]
    assert frame.select(pl.all_horizontal([pl.col(c).is_between(0, 1) for c in ratios]).all()).item()
    util = frame["gpu_util"].drop_nulls()
    assert util.is_between(0, 100).all() and (util == util.round()).all()
    limits = pl.col("model_name").replace_strict({m: 700.0 if k != "A100" else 400.0 for k, (m, _) in MODELS.items()})
    assert frame.filter(pl.col("power_w") > limits).height == 0 and frame["power_w"].drop_nulls().min() > 0
    memory = (
        pl.when(pl.col("gpu_i_id").is_null())
        .then(pl.col("model_name").replace_strict({m: float(mem) for m, mem in MODELS.values()}))
        .otherwise(40192.0)
    )
    assert frame.select((pl.col("fb_used_mib") + pl.col("fb_free_mib") == memory).all()).item()
    assert frame.select((pl.col("fb_used_mib") > 0).all()).item()


def test_mig_rows_have_no_gpu_util_but_the_gpus_power_and_energy(mixed_day: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    frame, _ = mixed_day
    mig, whole = frame.filter(pl.col("gpu_i_id").is_not_null()), frame.filter(pl.col("gpu_i_id").is_null())
    assert mig["gpu_util"].null_count() == mig.height and whole["gpu_util"].null_count() == 0
    for column in ("power_w", "energy_mj"):
        assert mig[column].null_count() == 0 and whole[column].null_count() == 0
    assert mig["gpu_i_profile"].unique().to_list() == ["3g.40gb"] and mig["sm_active"].null_count() == 0
    assert mig.filter(pl.col("hpc_job") == "15")["sm_active"].mean() > 0.9


def test_same_seed_same_frame_other_seed_other_noise(mixed_day: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    frame, alloc = mixed_day
    inv = inventory(["H100", "A100"], mig_gpus=2)
    assert generate_day(inv.reverse(), alloc.reverse(), DAY, 30, 11, "t").equals(frame)
    other = generate_day(inv, alloc, DAY, 30, 12, "t")
    assert other["hpc_job"].equals(frame["hpc_job"]) and not other["power_w"].equals(frame["power_w"])


def test_whole_gpus_bit_identical_to_before_mig_power(mixed_day: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    """Digest of the whole-GPU values of the mixed day, taken before MIG GPUs had power: the MIG
    instances sort first in the same chunk, so this fails if they change the random draws."""
    frame, _ = mixed_day
    columns = [
        "gpu_util",
        "gr_engine_active",
        "sm_active",
        "sm_occupancy",
        "tensor_active",
        "dram_active",
        "fb_used_mib",
        "fb_free_mib",
        "power_w",
        "energy_mj",
    ]
    values = frame.filter(pl.col("gpu_i_id").is_null()).select(columns).to_numpy()
    digest = hashlib.sha256(np.ascontiguousarray(values, dtype=np.float64).tobytes()).hexdigest()
    assert digest == "a4cd677a3efe6b067fb5c298fef3589b326506da2dd338425709e78c37259575"
