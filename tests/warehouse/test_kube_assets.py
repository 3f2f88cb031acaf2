"""The Kubernetes assets through Dagster on a temp warehouse, fed by a simulated cluster's
kube_state.om (file mode): landing per day, staged pods and jobs per month, reruns identical."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from dagster import materialize

from contracts.runs import FORCE_SHRINK_TAG
from pipelines.assets.kube import raw_kube_series, stg_kube__jobs_asset, stg_kube__pods_asset
from pipelines.assets.kube_nodes import stg_kube__node_capacity_asset, stg_kube__node_downtime_asset
from pipelines.errors import asset_error
from pipelines.resources import CardhoursResource
from simulate.kube.nodes import NODE_EVENTS
from simulate.run import SimulationResult, simulate
from tests.support.warehouse_read import read_lake
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
        daily = [raw_kube_series, stg_kube__node_capacity_asset, stg_kube__node_downtime_asset]
        assert materialize(daily, partition_key=key, resources={"cardhours": resource}).success
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
                "raw.kube_node_runs",
                "staging.stg_kube__node_capacity",
                "staging.stg_kube__node_downtime",
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
    origin = datetime.combine(DAY, datetime.min.time())
    down = first["staging.stg_kube__node_downtime"].select("hostname", "start_ts", "end_ts").rows()
    assert sorted(down) == sorted(
        (node, origin + timedelta(seconds=a), origin + timedelta(seconds=b)) for node, _, a, b in NODE_EVENTS
    )
    capacity = first["staging.stg_kube__node_capacity"]
    assert capacity.group_by("hostname").agg(pl.col("hour").n_unique())["hour"].to_list() == [24 * DAYS] * 5
    run_all(sim)
    again = tables(sim)
    for name, frame in first.items():
        assert frame.equals(again[name]), name


def _keep_before(om: Path, cut: int) -> None:
    """The OpenMetrics file with every sample at or after ``cut`` (epoch seconds) dropped, as a
    server past its retention would hold only part of the day (here: its other end)."""
    kept = []
    for line in om.read_text().splitlines():
        fields = line.split(" ")
        if line.startswith("#") or len(fields) < 3 or float(fields[-1]) < cut:
            kept.append(line)
    om.write_text("\n".join(kept) + "\n")


def _series(site: SimulationResult) -> pl.DataFrame:
    return read_lake(site.config_path, "SELECT * FROM raw.kube_series ORDER BY ALL")


def test_a_kube_day_read_again_with_fewer_samples_is_refused_unless_forced(tmp_path: Path) -> None:
    site = simulate(tmp_path, gpus=8, days=1, start=DAY, seed=3, step_seconds=STEP, metrics_format="parquet", kube=True)
    resource = CardhoursResource(config_path=str(site.config_path))
    key = DAY.isoformat()
    assert materialize([raw_kube_series], partition_key=key, resources={"cardhours": resource}).success
    before = _series(site)
    assert site.kube_state_path is not None
    _keep_before(site.kube_state_path, int(datetime(2026, 3, 30, 12, tzinfo=UTC).timestamp()))

    refused = materialize([raw_kube_series], partition_key=key, resources={"cardhours": resource}, raise_on_error=False)
    assert not refused.success
    (failure,) = [e for e in refused.all_events if e.is_step_failure]
    text = " ".join(asset_error(failure.event_specific_data.error).message.split())
    landed = int(before["n_samples"].sum())
    assert f"refused to replace raw.kube_series of cluster 'sim', day {key}: the lake holds {landed:,} " in text
    assert "kube-state-metrics samples, the new read only" in text and "retention" in text
    assert _series(site).equals(before)

    forced = {FORCE_SHRINK_TAG: "true"}
    assert materialize([raw_kube_series], partition_key=key, resources={"cardhours": resource}, tags=forced).success
    assert 0 < _series(site)["n_samples"].sum() < landed
