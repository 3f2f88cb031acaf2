"""Simulated DCGM samples: shapes fitted to the real H200 trace, contracts of generate_day."""

from __future__ import annotations

import os
from datetime import date, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cardhours.schemas import RAW_SAMPLE_SCHEMA
from cardhours.simulate import shapes
from tests.fixtures import h200
from cardhours.simulate.samples import COUNTER_EPOCH_US, DAY_US, REBOOT_PERIOD_US, generate_day

DAY = date(2026, 3, 2)
MIDNIGHT = datetime(2026, 3, 2)
MODELS = {"H100": ("NVIDIA H100 80GB HBM3", 81559), "H200": ("NVIDIA H200", 143771),
          "A100": ("NVIDIA A100-SXM4-80GB", 81920)}
ALLOC_SCHEMA = {"job_id_raw": pl.String, "run_index": pl.Int64, "hostname": pl.String, "gpu": pl.Int16,
                "gpu_i_id": pl.Int16, "start_time": pl.Datetime("us"), "end_time": pl.Datetime("us"),
                "kind": pl.String, "seed": pl.Int64}


def inventory(models: list[str], mig_gpus: int = 0) -> pl.DataFrame:
    """One node per model entry (4 GPUs each), plus `mig_gpus` A100s split into two 3g.40gb."""
    rows = []
    for node, model in enumerate(models):
        for gpu in range(4):
            rows.append(_instance(f"n{node:02d}", gpu, model, None))
    for gpu in range(mig_gpus):
        rows += [_instance("mig00", gpu, "A100", gi) for gi in (1, 2)]
    return pl.DataFrame(rows, schema_overrides={"gpu": pl.Int16, "gpu_i_id": pl.Int16, "memory_mib": pl.Int64})


def _instance(host: str, gpu: int, model: str, gi: int | None) -> dict[str, object]:
    name, memory = MODELS[model]
    return {"cluster": "t", "hostname": host, "gpu": gpu, "uuid": f"GPU-{host}-{gpu}",
            "pci_bus_id": f"00000000:{gpu:02X}:00.0", "device": f"nvidia{gpu}", "model_name": name, "gpu_model": model,
            "memory_mib": 40192 if gi else memory, "gpu_i_id": gi, "gpu_i_profile": "3g.40gb" if gi else None,
            "nvlink_domain": "d0", "switch_group": "s0"}


def allocations(rows: list[tuple]) -> pl.DataFrame:
    """Rows of (job, host, gpu, gpu_i_id, start, end, kind, seed); run_index 0."""
    return pl.DataFrame([(j, 0, h, g, gi, s, e, k, sd) for j, h, g, gi, s, e, k, sd in rows],
                        schema=ALLOC_SCHEMA, orient="row")


def at(hours: float = 0.0, seconds: float = 0.0) -> datetime:
    return MIDNIGHT + timedelta(hours=hours, seconds=seconds)


def steady(frame: pl.DataFrame, alloc: pl.DataFrame, step: int) -> pl.DataFrame:
    """Samples inside a job after its CUDA-init sample, with the job's kind."""
    return (frame.join(alloc.select("job_id_raw", "hostname", "gpu", "start_time", "kind"),
                       left_on=["hpc_job", "hostname", "gpu"], right_on=["job_id_raw", "hostname", "gpu"])
            .filter(pl.col("ts") >= pl.col("start_time") + timedelta(seconds=step)))


# ---- the real trace ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trace_dir() -> Path:
    path = h200.trace_dir()
    if not (path / "capA_samples.csv").exists():
        pytest.fail(f"H200 trace not found in {path} (CARDHOURS_H200_TRACE overrides the directory)")
    return path


def trace_steady(trace_dir: Path) -> pl.DataFrame:
    """The trace's steady-state samples per kind, in the simulator's units (see shapes.py).

    Jobs: after the CUDA init (memory at baseline) and the first, partial, active second,
    minus the last sample. Idle: samples at least 3 s after the idle period began."""
    samples = pl.read_csv(trace_dir / "capA_samples.csv")
    jobs = pl.read_csv(trace_dir / "capA_jobs.csv")
    baseline = samples["fb_used_bytes"].min()
    parts = []
    for job in jobs.iter_rows(named=True):
        window = samples.filter((pl.col("ts") >= job["start"]) & (pl.col("ts") < job["end"]))
        if job["kind"] == "idle":
            window = window.filter(pl.col("ts") >= job["start"] + 3)
        else:
            held = np.flatnonzero(window["fb_used_bytes"].to_numpy() > baseline + 2**24)
            window = window[int(held[0]) + 1: int(held[-1])]
        parts.append(window.with_columns(kind=pl.lit(job["kind"])))
    return pl.concat(parts).select(
        "kind", "gpu_util", gr_engine_active=pl.col("gpm_graphics_util") / 100, sm_active=pl.col("gpm_sm_util") / 100,
        sm_occupancy=pl.col("gpm_sm_occupancy") / 100, tensor_active=pl.col("gpm_any_tensor_util") / 100,
        dram_active=pl.col("gpm_dram_bw_util") / 100, power_w=pl.col("power_mw") / 1000,
        held_mib=(pl.col("fb_used_bytes") - baseline) / 2**20)


@pytest.fixture(scope="module")
def simulated_h200() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Six H200 nodes; each runs four 21-hour jobs (own seeds) of one kind; one node idles."""
    kinds = ["dense", "hog", "bursty", "starved", "tiny", "idle"]
    inv = inventory(["H200"] * len(kinds))
    rows = [(f"{node}{gpu}", f"n{node:02d}", gpu, None, at(1, 7), at(22), kind, 1000 * node + gpu)
            for node, kind in enumerate(kinds) for gpu in range(4)]
    alloc = allocations(rows)
    return generate_day(inv, alloc, DAY, 30, 5, "t"), alloc


METRICS_PP = ["gpu_util", "gr_engine_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active"]


def test_per_kind_means_match_the_trace(trace_dir: Path, simulated_h200: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    frame, alloc = simulated_h200
    trace = trace_steady(trace_dir).group_by("kind").mean()
    baseline = round(143771 * shapes.BASELINE_FB_FRAC)
    sim = steady(frame, alloc, 30).with_columns(held_mib=pl.col("fb_used_mib") - baseline)
    idle = frame.filter(pl.col("hpc_job").is_null()).with_columns(kind=pl.lit("idle"), held_mib=pl.lit(0.0))
    means = pl.concat([sim.select(trace.columns), idle.select(trace.columns)]).group_by("kind").mean()
    joined = trace.join(means, on="kind", suffix="_sim")
    assert joined.height == 6
    for row in joined.iter_rows(named=True):
        for metric in METRICS_PP:
            scale = 1.0 if metric == "gpu_util" else 100.0
            assert abs(row[metric] - row[f"{metric}_sim"]) * scale <= 3.0, (row["kind"], metric, row)
        assert row["power_w_sim"] == pytest.approx(row["power_w"], rel=0.15), row["kind"]
        assert row["held_mib_sim"] == pytest.approx(row["held_mib"], rel=0.2, abs=1.0), row["kind"]


def test_gpu_util_disagrees_with_sm_active_for_tiny_and_bursty(
        simulated_h200: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    frame, alloc = simulated_h200
    means = steady(frame, alloc, 30).group_by("kind").agg(pl.col("gpu_util", "sm_active", "gr_engine_active").mean())
    by_kind = {row["kind"]: row for row in means.iter_rows(named=True)}
    assert by_kind["tiny"]["gpu_util"] > 95 and by_kind["tiny"]["sm_active"] < 0.02  # one SM busy, bit always set
    assert by_kind["bursty"]["gpu_util"] < 3 and by_kind["bursty"]["sm_active"] > 0.08  # bursts the bit misses
    assert by_kind["bursty"]["gr_engine_active"] > by_kind["bursty"]["sm_active"]


def test_starved_duty_cycle_matches_the_trace(trace_dir: Path) -> None:
    util = trace_steady(trace_dir).filter(pl.col("kind") == "starved")["gpu_util"].to_numpy()
    alloc = allocations([("7", "n00", 0, None, at(1), at(2), "starved", 77)])
    sim = generate_day(inventory(["H200"]), alloc, DAY, 1, 3, "t")
    sim_util = steady(sim, alloc, 5)["gpu_util"].to_numpy()
    assert _dominant_lag(sim_util) == _dominant_lag(util) == 3
    assert np.mean(sim_util >= 12) == pytest.approx(np.mean(util >= 12), abs=0.1)


def _dominant_lag(series: np.ndarray) -> int:
    centred = series - series.mean()
    corr = [np.dot(centred[:-lag], centred[lag:]) / (len(series) - lag) for lag in range(2, 7)]
    return 2 + int(np.argmax(corr))


# ---- contracts --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mixed_day() -> tuple[pl.DataFrame, pl.DataFrame]:
    """H100 + A100 nodes and two MIG'd A100s; jobs of every kind incl. one on a MIG slice."""
    alloc = allocations([
        ("10", "n00", 0, None, at(0, 15), at(3), "dense", 1),  # start on the grid
        ("11", "n00", 0, None, at(3), at(5, 10), "bursty", 2),  # starts where 10 ends
        ("12", "n00", 1, None, at(-5), at(30), "idle_tail", 3),  # spans the whole day
        ("13", "n01", 2, None, at(2), at(12), "idle_tail", 4),
        ("14", "n01", 3, None, at(6), at(7), "idle", 5),
        ("15", "mig00", 1, 2, at(1), at(9), "dense", 6),
        ("16", "n00", 2, None, at(4), at(4, 20), "tiny", 7),  # one sample: no init phase
    ])
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
    memory = pl.when(pl.col("gpu_i_id").is_null()).then(
        pl.col("model_name").replace_strict({m: float(mem) for m, mem in MODELS.values()})).otherwise(40192.0)
    assert frame.select((pl.col("fb_used_mib") + pl.col("fb_free_mib") == memory).all()).item()
    assert frame.select((pl.col("fb_used_mib") > 0).all()).item()


def test_mig_rows_have_no_device_level_fields(mixed_day: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    frame, _ = mixed_day
    mig, whole = frame.filter(pl.col("gpu_i_id").is_not_null()), frame.filter(pl.col("gpu_i_id").is_null())
    for column in ("gpu_util", "power_w", "energy_mj"):
        assert mig[column].null_count() == mig.height and whole[column].null_count() == 0
    assert mig["gpu_i_profile"].unique().to_list() == ["3g.40gb"] and mig["sm_active"].null_count() == 0
    assert mig.filter(pl.col("hpc_job") == "15")["sm_active"].mean() > 0.9


def test_same_seed_same_frame_other_seed_other_noise(mixed_day: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    frame, alloc = mixed_day
    inv = inventory(["H100", "A100"], mig_gpus=2)
    assert generate_day(inv.reverse(), alloc.reverse(), DAY, 30, 11, "t").equals(frame)
    other = generate_day(inv, alloc, DAY, 30, 12, "t")
    assert other["hpc_job"].equals(frame["hpc_job"]) and not other["power_w"].equals(frame["power_w"])


def test_jobs_differ_but_gpus_of_one_job_agree() -> None:
    rows = [(f"j{node}", f"n{node:02d}", gpu, None, at(0), at(24), "bursty", 50 + node)
            for node in range(6) for gpu in range(4)]
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
    overlapping = allocations([("1", "n00", 0, None, at(1), at(3), "dense", 1),
                               ("2", "n00", 0, None, at(2), at(4), "dense", 2)])
    with pytest.raises(ValueError, match="overlapping"):
        generate_day(inv, overlapping, DAY, 30, 1, "t")
    with pytest.raises(ValueError, match="unknown allocation kinds"):
        generate_day(inv, allocations([("1", "n00", 0, None, at(1), at(3), "mystery", 1)]), DAY, 30, 1, "t")
    with pytest.raises(ValueError, match="not in the inventory"):
        generate_day(inv, allocations([("1", "n09", 0, None, at(1), at(3), "dense", 1)]), DAY, 30, 1, "t")
    with pytest.raises(ValueError, match="divide 86400"):
        generate_day(inv, allocations([]), DAY, 7, 1, "t")


# ---- the energy counter -----------------------------------------------------------------------


def month_allocations() -> pl.DataFrame:
    """Every other day, a job per GPU from 03:00+ to 05:00 the next day (crossing midnight)."""
    kinds = ["dense", "bursty", "hog", "starved"]
    return allocations([(f"{d}-{g}", f"n{g // 4:02d}", g % 4, None, at(24 * d + 3 + g), at(24 * d + 29),
                         kinds[g % 4], 100 * d + g) for d in range(0, 30, 2) for g in range(8)])


@pytest.fixture(scope="module")
def month() -> list[pl.DataFrame]:
    """Thirty days of 8 GPUs at a 10-minute step."""
    inv, alloc = inventory(["H100", "H200"]), month_allocations()
    return [generate_day(inv, alloc, DAY + timedelta(days=d), 600, 21, "t") for d in range(30)]


def test_energy_counter_follows_power_with_one_reset_a_month(month: list[pl.DataFrame]) -> None:
    frame = pl.concat(month).sort("hostname", "gpu", "ts")
    steps = frame.with_columns(
        diff=pl.col("energy_mj").diff().over("hostname", "gpu"),
        expected=(pl.col("power_w").shift() * 600 * 1000).over("hostname", "gpu")).drop_nulls("diff")
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
    from cardhours.simulate.samples import make_fleet, reboots

    fleet = make_fleet(inventory(["H100", "H100"], mig_gpus=1), seed=3)
    times, insts = reboots(fleet, 3, COUNTER_EPOCH_US + 12 * REBOOT_PERIOD_US)
    assert np.all(np.diff(times) == REBOOT_PERIOD_US) and times.size == 12
    assert fleet.whole[insts].all()
    for start in COUNTER_EPOCH_US + np.arange(0, 11 * REBOOT_PERIOD_US, 7 * DAY_US):  # any 30 days: one reboot
        assert ((times >= start) & (times < start + REBOOT_PERIOD_US)).sum() == 1


def test_gpus_without_jobs_idle_and_an_empty_inventory_gives_an_empty_frame() -> None:
    frame = generate_day(inventory(["A100"], mig_gpus=1), allocations([]), DAY, 300, 1, "t")
    assert frame.height == 6 * 288 and frame["hpc_job"].null_count() == frame.height
    assert frame["sm_active"].max() == 0.0 and frame["power_w"].max() < 0.15 * 400
    empty = generate_day(inventory(["A100"]).clear(), allocations([]), DAY, 300, 1, "t")
    assert empty.height == 0 and empty.schema == pl.Schema(RAW_SAMPLE_SCHEMA)
