"""Simulated DCGM samples: per-kind shapes fitted to the real H200 trace (means, disagreements, duty cycle)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from simulate import shapes
from simulate.samples import generate_day
from tests.fixtures import h200
from tests.unit.sim_samples_cases import DAY, allocations, at, inventory, steady


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
            window = window[int(held[0]) + 1 : int(held[-1])]
        parts.append(window.with_columns(kind=pl.lit(job["kind"])))
    return pl.concat(parts).select(
        "kind",
        "gpu_util",
        gr_engine_active=pl.col("gpm_graphics_util") / 100,
        sm_active=pl.col("gpm_sm_util") / 100,
        sm_occupancy=pl.col("gpm_sm_occupancy") / 100,
        tensor_active=pl.col("gpm_any_tensor_util") / 100,
        dram_active=pl.col("gpm_dram_bw_util") / 100,
        power_w=pl.col("power_mw") / 1000,
        held_mib=(pl.col("fb_used_bytes") - baseline) / 2**20,
    )


@pytest.fixture(scope="module")
def simulated_h200() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Six H200 nodes; each runs four 21-hour jobs (own seeds) of one kind; one node idles."""
    kinds = ["dense", "hog", "bursty", "starved", "tiny", "idle"]
    inv = inventory(["H200"] * len(kinds))
    rows = [
        (f"{node}{gpu}", f"n{node:02d}", gpu, None, at(1, 7), at(22), kind, 1000 * node + gpu)
        for node, kind in enumerate(kinds)
        for gpu in range(4)
    ]
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
    simulated_h200: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
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
