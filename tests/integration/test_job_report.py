"""``cardhours job`` on a built month of a simulated mixed site (8 Slurm GPUs and the Kubernetes
pool: MIG inference pods, Kueue PyTorchJobs and Volcano gangs over two hosts), in text and
--json, against the marts it reads; an unknown id; and a warehouse held by a writer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import DagsterInstance

from pipelines.assets.gate import GATE_STEP
from pipelines.definitions import build_definitions
from simulate.run import simulate
from warehouse import hold_warehouse

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CARDHOURS = str(Path(sys.executable).with_name("cardhours"))
T0, DAYS, MONTH = date(2026, 3, 2), 2, "2026-03-01"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The simulated days landed and the month built through Dagster (files as sources)."""
    sim = simulate(tmp_path_factory.mktemp("jobsite"), gpus=8, days=DAYS, start=T0, seed=11, step_seconds=120,
                   metrics_format="parquet", kube=True)  # fmt: skip
    definitions = build_definitions(str(sim.config_path))
    with DagsterInstance.ephemeral() as instance:
        for i in range(DAYS):
            day = (T0 + timedelta(days=i)).isoformat()
            job = definitions.resolve_job_def("daily_ingest")
            assert job.execute_in_process(partition_key=day, instance=instance).success
        gate = {"ops": {GATE_STEP: {"config": {"accept_gaps": f"the site serves {DAYS} days of March"}}}}
        monthly = definitions.resolve_job_def("monthly_review")
        assert monthly.execute_in_process(partition_key=MONTH, instance=instance, run_config=gate).success
    with duckdb.connect(str(sim.config_path.with_name("cardhours.duckdb")), read_only=True) as conn:
        marts = {name: conn.sql(f"SELECT * FROM marts.{name}").pl() for name in ("fct_job_usage", "fct_job_flags")}
        marts["charges"] = conn.sql(
            "SELECT job_id, sum(cost)::DOUBLE AS cost FROM marts.fct_chargeback_jobs GROUP BY 1"
        ).pl()
    return {"config": sim.config_path, **marts}


def _job(site: dict, *args: str) -> subprocess.CompletedProcess:
    command = [CARDHOURS, "job", *args, "--config", str(site["config"])]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})


def _json(site: dict, job_id: str) -> dict:
    done = _job(site, job_id, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def _pick(site: dict, condition: pl.Expr) -> dict:
    rows = site["fct_job_usage"].filter(condition & (pl.col("utilization").is_not_null())).sort("gpu_hours")
    assert rows.height, "the simulated month has no such job"
    return rows.row(-1, named=True)


def _agrees_with_the_marts(site: dict, report: dict, row: dict) -> None:
    totals = report["totals"]
    assert totals["gpu_hours"] == pytest.approx(row["gpu_hours"])
    assert totals["utilization"] == pytest.approx(row["utilization"])
    assert totals["energy_kwh"] == pytest.approx(row["energy_kwh"])
    assert totals["gpus"] == pytest.approx(row["gpus"])
    assert sum(g["energy_kwh"] for g in report["gpus"]) == pytest.approx(row["energy_kwh"], rel=1e-9)
    flagged = site["fct_job_flags"].filter(pl.col("job_id") == row["job_id"])
    assert sorted(f["reason"] for f in report["flags"]) == sorted(flagged["reason"])
    cost = site["charges"].filter(pl.col("job_id") == row["job_id"])["cost"]
    assert totals["cost"] == pytest.approx(cost.sum()) and cost.len() == 1


def test_a_mig_job(site: dict) -> None:
    row = _pick(site, pl.col("gpu_model").str.contains(r"\dg\."))
    report = _json(site, row["job_id"])
    _agrees_with_the_marts(site, report, row)
    (line,) = report["gpus"]
    assert line["mig_profile"] and line["gpu_fraction"] < 1 and 0 < row["gpus"] < 1
    assert line["card_memory_mib"] < 81559  # the instance's own memory, not the card's
    text = _job(site, row["job_id"]).stdout
    assert f"x {row['gpu_model']}" in text and "Kubernetes pod" in text and "Flags" in text


def test_a_multi_gpu_multi_host_job(site: dict) -> None:
    row = _pick(site, pl.col("hosts").str.contains(",") & pl.col("job_id").str.contains("/PyTorchJob/"))
    report = _json(site, row["job_id"])
    _agrees_with_the_marts(site, report, row)
    hosts = {g["hostname"] for g in report["gpus"]}
    assert hosts == set(row["hosts"].split(",")) and len(report["gpus"]) == row["gpus"]
    assert all(g["utilization_signal"] == "sm_active" for g in report["gpus"])
    assert "Kueue LocalQueue" in report["kind"]
    text = _job(site, row["job_id"]).stdout
    assert "Per GPU" in text and all(host in text for host in hosts)


def test_a_kubernetes_gang_found_by_its_name(site: dict) -> None:
    row = _pick(site, pl.col("job_id").str.contains("/PodGroup/"))
    name = row["job_id"].rsplit("/", 1)[1]
    report = _json(site, name)
    _agrees_with_the_marts(site, report, row)
    assert report["kind"].startswith("Kubernetes PodGroup") and "gang" in report["kind"]
    text = _job(site, name).stdout
    assert "gang (pod group)" in text and "utilization" in text and "by SM active" in text


def test_an_unknown_id_names_what_was_searched(site: dict) -> None:
    done = _job(site, "no-such-job")
    assert done.returncode == 1
    message = " ".join(done.stderr.split())
    assert "no job 'no-such-job' in cluster(s) sim, month(s) 2026-03" in message
    assert "fct_job_usage" in message
    assert _job(site, "no-such-job", "--month", "2026-04").returncode == 1


def test_a_warehouse_being_written_is_named(site: dict) -> None:
    with hold_warehouse(site["config"].with_name("cardhours.duckdb"), "cardhours run --month 2026-03"):
        done = _job(site, "1000")
    assert done.returncode == 75
    assert "busy: cardhours run --month 2026-03" in " ".join(done.stderr.split())
