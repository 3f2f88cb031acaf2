"""Slurm and Kubernetes in one cluster config through the daily and monthly Dagster jobs on a
temp warehouse (file mode: the simulator's Parquet samples and kube_state.om): every blocking
check passes, pods are jobs in fct_job_usage, and a rerun of the month gives identical rows."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import polars as pl
import pytest
from dagster import DagsterInstance

from pipelines.assets.gate import GATE_STEP
from pipelines.definitions import build_definitions
from simulate.run import SimulationResult, simulate
from warehouse import connect
from warehouse.connection import read_frame

DAY = date(2026, 3, 30)
DAYS = 2
# The simulation covers the month's last two days: the build accepts the other 29 as gaps.
ONLY_TWO_DAYS = {"ops": {GATE_STEP: {"config": {"accept_gaps": "simulated days 30 and 31 only"}}}}
TABLES = (
    "intermediate.int_gpu_minutes_attributed",
    "marts.fct_job_usage",
    "marts.fct_gpu_hourly",
    "marts.mart_department_monthly",
    "marts.mart_cluster_monthly",
    "marts.mart_deployment_monthly",
    "marts.mart_kube_queue_monthly",
)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate(
        tmp_path_factory.mktemp("kube_marts"),
        gpus=8,
        days=DAYS,
        start=DAY,
        seed=3,
        step_seconds=300,
        metrics_format="parquet",
        kube=True,
    )


def run_month(sim: SimulationResult, instance: DagsterInstance, daily: bool) -> dict:
    definitions = build_definitions(str(sim.config_path))
    for i in range(DAYS if daily else 0):
        key = (DAY + timedelta(days=i)).isoformat()
        assert (
            definitions.resolve_job_def("daily_ingest").execute_in_process(partition_key=key, instance=instance).success
        )
    result = definitions.resolve_job_def("monthly_review").execute_in_process(
        partition_key="2026-03-01", instance=instance, run_config=ONLY_TWO_DAYS
    )
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert all(checks.values()) and {
        "samples_conserved",
        "allocation_within_capacity",
        "capacity_balance",
        "gx_stg_kube__pods",
        "gx_stg_kube__jobs",
    } <= set(checks)
    conn = connect(Path(sim.out_dir) / "cardhours.duckdb")
    try:
        return {name: read_frame(conn, f"SELECT * FROM {name} ORDER BY ALL") for name in TABLES}
    finally:
        conn.close()


def test_mixed_month_builds_and_reruns_identically(sim: SimulationResult) -> None:
    with DagsterInstance.ephemeral() as instance:
        first = run_month(sim, instance, daily=True)
        again = run_month(sim, instance, daily=False)
    for name in TABLES:
        assert first[name].equals(again[name]), name
    usage = first["marts.fct_job_usage"]
    assert set(usage["scheduler"]) == {"slurm", "kubernetes"}
    kube = usage.filter(pl.col("scheduler") == "kubernetes")
    truth = pl.read_parquet(sim.truth_pods_path).filter(pl.col("n_scrapes") > 0)
    assert sorted(kube["job_id"]) == sorted(truth["job_key"].unique())
    assert (kube.filter(pl.col("n_samples") > 0)["attribution_method"] == "pod_label").all()
    assert first["marts.mart_deployment_monthly"].height >= 3
    assert set(first["marts.mart_kube_queue_monthly"]["queue_kind"]) == {"kueue", "volcano"}
