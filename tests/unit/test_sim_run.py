"""simulate() end to end: the files, truth against the sample grid, determinism by seed."""

from __future__ import annotations

import math
from datetime import date, datetime
from pathlib import Path

import polars as pl
import pytest

from config import load_config
from simulate.run import SimulationResult, simulate

START = date(2026, 10, 1)
STEP = 60


def _simulate(out: Path, seed: int, metrics_format: str, calls: list | None = None) -> SimulationResult:
    progress = (lambda stage, done, total: calls.append((stage, done, total))) if calls is not None else None
    return simulate(
        out,
        gpus=16,
        days=2,
        start=START,
        seed=seed,
        step_seconds=STEP,
        metrics_format=metrics_format,
        cluster="sim",
        progress=progress,
    )


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[SimulationResult, list]:
    calls: list = []
    return _simulate(tmp_path_factory.mktemp("a"), seed=9, metrics_format="both", calls=calls), calls


def test_files_written(both: tuple[SimulationResult, list]) -> None:
    result, calls = both
    for path in (result.sacct_path, result.truth_path, result.inventory_path, result.config_path, result.om_path):
        assert path is not None and path.is_file() and path.stat().st_size > 0
    assert result.metrics_dir is not None
    assert sorted(p.parent.name for p in result.metrics_dir.glob("day=*/part-0.parquet")) == [
        "day=2026-10-01",
        "day=2026-10-02",
    ]
    assert result.om_path.read_text(encoding="utf-8").rstrip().endswith("# EOF")
    lines = result.sacct_path.read_text(encoding="utf-8").splitlines()
    assert result.n_sacct_rows == len(lines) - 1
    assert result.n_runs == pl.read_parquet(result.truth_path).height
    assert result.n_instances == pl.read_parquet(result.inventory_path).height == 16
    assert ("samples", 2, 2) in calls and calls[-1] == ("write", 1, 1)
    assert set(result.paths()) == {"sacct", "truth", "inventory", "config", "metrics", "openmetrics", "truth_capacity"}
    config = load_config(result.config_path)
    assert config.cluster("sim").metrics.path == result.metrics_dir


def test_samples_on_disk_cover_the_window(both: tuple[SimulationResult, list]) -> None:
    result, _ = both
    samples = pl.read_parquet(result.metrics_dir / "**/*.parquet", hive_partitioning=False)
    assert samples.height == result.n_samples == 16 * 2 * 86400 // STEP
    assert samples["ts"].min() == datetime(2026, 10, 1) and samples["ts"].max() < datetime(2026, 10, 3)


def _grid_points(start: datetime, end: datetime) -> int:
    """Sample times k * STEP from the window start that fall in [start, end)."""
    base = datetime(2026, 10, 1)
    first = math.ceil((start - base).total_seconds() / STEP)
    stop = math.ceil((end - base).total_seconds() / STEP)
    return max(0, stop - first)


def test_truth_counts_the_runs_samples(both: tuple[SimulationResult, list]) -> None:
    result, _ = both
    truth = pl.read_parquet(result.truth_path)
    window_end = datetime(2026, 10, 3)
    started = truth.filter(pl.col("start_time").is_not_null())
    assert started.height > 10
    for row in started.iter_rows(named=True):
        expected = row["gpu_slots"] * _grid_points(row["start_time"], row["end_time"] or window_end)
        assert row["n_samples"] == expected, row["job_id"]
        if expected:
            assert 0.0 <= row["true_mean_sm_active"] <= 1.0
    assert (started.filter(pl.col("end_time").is_null())["n_samples"] > 0).all()  # running at the end
    never = truth.filter(pl.col("start_time").is_null())
    assert never.height > 0 and (never["n_samples"] == 0).all() and (never["gpu_seconds"] == 0).all()
    dense = started.filter((pl.col("kind") == "dense") & (pl.col("n_samples") > 100))["true_mean_sm_active"]
    idle = started.filter((pl.col("kind") == "idle") & (pl.col("n_samples") > 100))["true_mean_sm_active"]
    assert dense.len() and idle.len() and dense.min() > idle.max()


def test_same_seed_same_output_other_seed_differs(both: tuple[SimulationResult, list], tmp_path: Path) -> None:
    first, _ = both
    again = _simulate(tmp_path / "b", seed=9, metrics_format="parquet")
    assert again.sacct_path.read_bytes() == first.sacct_path.read_bytes()
    assert pl.read_parquet(again.truth_path).equals(pl.read_parquet(first.truth_path))
    assert pl.read_parquet(again.inventory_path).equals(pl.read_parquet(first.inventory_path))
    assert again.config_path.read_text() == first.config_path.read_text()
    assert again.om_path is None and not (tmp_path / "b" / "metrics.om").exists()
    assert "openmetrics" not in again.paths()
    other = _simulate(tmp_path / "c", seed=10, metrics_format="om")
    assert other.sacct_path.read_bytes() != first.sacct_path.read_bytes()
    assert other.metrics_dir is None and 'path = "metrics.om"' in other.config_path.read_text()


def test_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="step_seconds"):
        simulate(tmp_path, gpus=8, days=1, start=START, seed=1, step_seconds=7)
    with pytest.raises(ValueError, match="metrics_format"):
        simulate(tmp_path, gpus=8, days=1, start=START, seed=1, metrics_format="csv")
    with pytest.raises(ValueError, match="gpus"):
        simulate(tmp_path, gpus=0, days=1, start=START, seed=1)
