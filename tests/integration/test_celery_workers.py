"""The daily ingest on Celery workers: a real Redis broker, two workers, three days at once.

A simulated 16-GPU cluster of three days (file source). The harness starts a Redis
(tests/support/redis.py) and two ``celery -A dagster_celery.app worker`` processes
(tests/support/celery_workers.py) on the repository's dagster.yaml, then runs
``dagster job execute -m pipelines.celery_definitions -j daily_ingest_celery`` for each day, all
three at once, while the test holds the warehouse lock (the daily steps never open the DuckDB
file). Then: every day succeeded, the steps were executed by both workers (the worker Dagster's
step events name), the three days are in the one lake, and the month built afterwards by the
code location's monthly job (in-process) has the same landed rows, marts and chargeback as the
same days run through the in-process path into a warehouse of their own.
"""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pytest
import yaml
from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from config import load_config
from pipelines.assets.gate import GATE_STEP
from pipelines.definitions import build_definitions
from pipelines.jobs import DAILY_CELERY_JOB, DAILY_JOB
from pipelines.tables import RAW_DCGM_SAMPLES, RAW_SLURM_SACCT, STG_DCGM__GPU_HOURLY, STG_DCGM__GPU_MINUTELY
from simulate.run import simulate
from tests.support.celery_workers import CeleryWorkers, step_workers
from tests.support.dagster_cli import execute_partition, instance_home
from tests.support.redis import BACKEND_DB, RedisServer
from tests.support.sites import own_warehouse
from tests.support.warehouse_read import read, table_digests
from warehouse.lake import partitions
from warehouse.lock import hold_warehouse

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MODULE = "pipelines.celery_definitions"
DAYS = ("2026-10-01", "2026-10-02", "2026-10-03")
MONTH = "2026-10-01"
GAPS = {"ops": {GATE_STEP: {"config": {"accept_gaps": "the test simulates three days of the month"}}}}


def _finish(runs) -> list[str]:
    try:
        return [run.communicate(timeout=900)[0] for run in runs]
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()


def _build_in_process(config: Path) -> None:
    """The three days and the month through Dagster's in-process path (as ``cardhours run`` runs them)."""
    definitions = build_definitions(str(config))
    with DagsterInstance.ephemeral() as instance:
        for day in DAYS:
            daily = definitions.resolve_job_def(DAILY_JOB).execute_in_process(partition_key=day, instance=instance)
            assert daily.success, day
        monthly = definitions.resolve_job_def("monthly_review")
        assert monthly.execute_in_process(partition_key=MONTH, instance=instance, run_config=GAPS).success


@pytest.fixture(scope="module")
def celery_days(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("celery")
    sim = simulate(root / "sim", gpus=16, days=3, start=date(2026, 10, 1), seed=7, step_seconds=300)
    config, home = sim.config_path, instance_home(root)
    settings = load_config(config)
    with RedisServer() as redis:
        env = {**redis.env, "CARDHOURS_CONFIG": str(config)}
        with CeleryWorkers(2, env, home, root / "worker_logs") as workers:
            with hold_warehouse(settings.warehouse.path, "a test holding the warehouse"):
                outputs = _finish([execute_partition(config, home, d, MODULE, DAILY_CELERY_JOB, env) for d in DAYS])
            report, hostnames = workers.report(), workers.hostnames
            results = len(redis.client(BACKEND_DB).keys("celery-task-meta-*"))
        lake_only = not settings.warehouse.path.exists()  # before the monthly build creates it
        gaps = root / "gaps.yaml"
        gaps.write_text(yaml.safe_dump(GAPS))
        (monthly,) = _finish([execute_partition(config, home, MONTH, MODULE, "monthly_review", env, gaps)])
    return {
        "config": config,
        "home": home,
        "outputs": outputs,
        "report": report,
        "hostnames": hostnames,
        "results": results,
        "lake_only": lake_only,
        "monthly": monthly,
    }


def _runs(home: Path, job: str) -> list:
    with DagsterInstance.from_config(str(home)) as instance:
        return list(instance.get_runs(RunsFilter(job_name=job)))


def test_every_day_succeeds_through_the_celery_executor(celery_days: dict) -> None:
    for day, output in zip(DAYS, celery_days["outputs"], strict=True):
        assert "RUN_SUCCESS" in output, f"{day}:\n{output[-3000:]}\n\n{celery_days['report']}"
        assert 'Submitting celery task for step "raw__dcgm_samples"' in output
    runs = _runs(celery_days["home"], DAILY_CELERY_JOB)
    statuses = sorted((run.tags["dagster/partition"], run.status) for run in runs)
    assert statuses == [(day, DagsterRunStatus.SUCCESS) for day in DAYS]


def test_steps_are_executed_by_both_workers(celery_days: dict) -> None:
    used: set[str] = set()
    steps = 0
    for run in _runs(celery_days["home"], DAILY_CELERY_JOB):
        with DagsterInstance.from_config(str(celery_days["home"])) as instance:
            by_step = step_workers(instance, run.run_id)
        assert {"raw__dcgm_samples", "raw__slurm_sacct", "staging__stg_dcgm__gpu_minutely"} <= set(by_step), by_step
        assert all(len(workers) == 1 for workers in by_step.values()), by_step  # each step ran once
        used |= set().union(*by_step.values())
        steps += len(by_step)
    assert used == set(celery_days["hostnames"]), celery_days["report"]
    assert celery_days["results"] == steps  # one result per step in the Redis result backend


def test_the_three_days_land_in_the_one_lake(celery_days: dict) -> None:
    lake = load_config(celery_days["config"]).warehouse.lake
    expected = [{"cluster": "sim", "day": day} for day in DAYS]
    for table in (RAW_DCGM_SAMPLES, RAW_SLURM_SACCT, STG_DCGM__GPU_HOURLY, STG_DCGM__GPU_MINUTELY):
        assert partitions(lake, table.lake_table) == expected, table.name
    assert celery_days["lake_only"], "a daily step on a Celery worker created the DuckDB file"


def test_the_month_equals_the_in_process_path(celery_days: dict) -> None:
    monthly = celery_days["monthly"]
    assert "RUN_SUCCESS" in monthly, monthly[-3000:]
    assert "Submitting celery task" not in monthly  # the monthly job runs in the run's own process
    config = celery_days["config"]
    in_process = own_warehouse(config, "in_process")
    _build_in_process(in_process)
    database = load_config(config).warehouse.path
    assert read(database, "SELECT count(*) AS n FROM marts.fct_job_usage").item() > 0  # a month, not an empty one
    assert table_digests(database) == table_digests(load_config(in_process).warehouse.path)
    shutil.rmtree(config.parent / "in_process")
