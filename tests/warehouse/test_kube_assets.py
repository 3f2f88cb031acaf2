"""The Kubernetes assets through Dagster on a temp warehouse, fed by a simulated cluster's
kube_state.om (file mode): landing per day, staged pods and jobs per month, reruns identical."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import polars as pl
import pytest
from dagster import materialize

from pipelines.assets.kube import raw_kube_series, stg_kube__jobs_asset, stg_kube__pods_asset
from pipelines.resources import CardhoursResource
from simulate.run import SimulationResult, simulate
from warehouse import connect
from warehouse.connection import read_frame

DAY = date(2026, 3, 30)
DAYS = 2  # the 30th and 31st: the month is fully landed
STEP = 300


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate(
        tmp_path_factory.mktemp("kube_assets"),
        gpus=8,
        days=DAYS,
        start=DAY,
        seed=3,
        step_seconds=STEP,
        metrics_format="parquet",
        kube=True,
    )


def run_all(sim: SimulationResult) -> None:
    resource = CardhoursResource(config_path=str(sim.config_path))
    for i in range(DAYS):
        key = (DAY + timedelta(days=i)).isoformat()
        assert materialize([raw_kube_series], partition_key=key, resources={"cardhours": resource}).success
    monthly = materialize(
        [stg_kube__pods_asset, stg_kube__jobs_asset], partition_key="2026-03-01", resources={"cardhours": resource}
    )
    assert monthly.success


def tables(sim: SimulationResult) -> dict[str, pl.DataFrame]:
    conn = connect(Path(sim.out_dir) / "cardhours.duckdb")
    try:
        return {
            name: read_frame(conn, f"SELECT * FROM {name} ORDER BY ALL")
            for name in (
                "raw.kube_series",
                "raw.kube_queue_samples",
                "staging.stg_kube__pods",
                "staging.stg_kube__jobs",
            )
        }
    finally:
        conn.close()


def test_assets_land_and_stage_every_seen_pod_and_rerun_identically(sim: SimulationResult) -> None:
    run_all(sim)
    first = tables(sim)
    truth = pl.read_parquet(sim.truth_pods_path).filter(pl.col("n_scrapes") > 0)
    pods, jobs = first["staging.stg_kube__pods"], first["staging.stg_kube__jobs"]
    assert sorted(first["raw.kube_series"]["day"].unique()) == [DAY, DAY + timedelta(days=1)]
    assert first["raw.kube_queue_samples"].height > 0
    joined = truth.join(pods, on=["namespace", "pod"], how="full", suffix="_staged", coalesce=True)
    assert joined.filter(pl.col("cluster").is_null() | pl.col("cluster_staged").is_null()).is_empty()
    assert (joined["gpu_seconds_staged"] - joined["gpu_seconds"]).abs().le(STEP * joined["gpus"] + 1e-6).all()
    assert jobs["job_id"].sort().to_list() == truth["job_key"].unique().sort().to_list()
    assert (pods["month"] == date(2026, 3, 1)).all()
    conn = connect(Path(sim.out_dir) / "cardhours.duckdb")
    try:
        landings = read_frame(conn, "SELECT cluster, day, source, rows, status FROM meta.landings ORDER BY day")
    finally:
        conn.close()
    per_day = first["raw.kube_series"].group_by("day").len().sort("day")["len"].to_list()
    assert landings.rows() == [("sim", DAY + timedelta(days=i), "kube", per_day[i], "ok") for i in range(DAYS)]
    run_all(sim)
    again = tables(sim)
    for name, frame in first.items():
        assert frame.equals(again[name]), name
