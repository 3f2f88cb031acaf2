"""The Celery code location (pipelines/celery_definitions.py): the same assets and resources as
pipelines/definitions.py, the daily job on the Celery executor with the broker named by
environment variable, the monthly job in-process; importing it reads no environment."""

from __future__ import annotations

import importlib

import pytest
from dagster import Definitions

import pipelines.celery_definitions as celery_location
from pipelines.celery_definitions import CELERY_EXECUTOR_CONFIG, build_celery_definitions
from pipelines.definitions import build_definitions
from pipelines.jobs import DAILY_CELERY_JOB, DAILY_JOB, LAKE_ONLY


def _asset_keys(definitions: Definitions) -> set:
    return set(definitions.resolve_asset_graph().get_all_asset_keys())


def test_same_assets_and_resources_as_the_default_location() -> None:
    celery, default = build_celery_definitions("unused.toml"), build_definitions("unused.toml")
    assert _asset_keys(celery) == _asset_keys(default)
    assert set(celery.resources) == set(default.resources) == {"cardhours"}


def test_the_daily_job_runs_on_celery_and_the_monthly_job_in_process() -> None:
    celery, default = build_celery_definitions("unused.toml"), build_definitions("unused.toml")
    daily = celery.resolve_job_def(DAILY_CELERY_JOB)
    assert daily.executor_def.name == "celery"
    assert sorted(daily.graph.node_names()) == sorted(default.resolve_job_def(DAILY_JOB).graph.node_names())
    assert celery.resolve_job_def("monthly_review").executor_def.name == "in_process"
    assert {job.name for job in celery.resolve_all_job_defs()} == {"__ASSET_JOB", DAILY_CELERY_JOB, "monthly_review"}
    schedule = celery.resolve_schedule_def(f"{DAILY_CELERY_JOB}_schedule")
    assert schedule.job_name == DAILY_CELERY_JOB and schedule.cron_schedule == "30 2 * * *"
    assert LAKE_ONLY.items() <= daily.tags.items()  # its runs never take the warehouse lock


def test_broker_and_backend_are_environment_variables_read_at_run_start(monkeypatch: pytest.MonkeyPatch) -> None:
    assert CELERY_EXECUTOR_CONFIG == {
        "broker": {"env": "CELERY_BROKER_URL"},
        "backend": {"env": "CELERY_RESULT_BACKEND"},
    }
    for name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CARDHOURS_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    reloaded = importlib.reload(celery_location)  # nothing set: importing must still work
    assert reloaded.defs.resolve_job_def(DAILY_CELERY_JOB).executor_def.name == "celery"
