"""A Kubernetes site whose config declares its MIG node whole (the site of conftest.py, read from
its files): the month builds, capacity counts the MIG instances DCGM reported in the hours it
reported them, and the chargeback reconciliation holds; the review says what to change."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import DagsterInstance

from pipelines.assets.gate import GATE_STEP
from pipelines.definitions import build_definitions
from simulate.run import SimulationResult
from tests.integration.kube.cases import DAYS, T0, T1

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MONTH = "2026-03-01"
MIG_HOST = "kmig-001"


def _whole_config(sim: SimulationResult) -> Path:
    """The simulator's config with every ``mig_layout`` removed: its MIG node declared whole."""
    text, removed = re.subn(r"^mig_layout = .*\n", "", sim.config_path.read_text(), flags=re.MULTILINE)
    assert removed == 1
    text = text.replace('path = "cardhours.duckdb"', 'path = "whole.duckdb"').replace(
        'dir = "reports"', 'dir = "whole_reports"'
    )
    path = sim.config_path.with_name("whole.toml")
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def built(sim: SimulationResult) -> dict:
    config_path = _whole_config(sim)
    definitions = build_definitions(str(config_path))
    with DagsterInstance.ephemeral() as instance:
        for i in range(DAYS):
            day = (T0 + timedelta(days=i)).date().isoformat()
            job = definitions.resolve_job_def("daily_ingest")
            assert job.execute_in_process(partition_key=day, instance=instance).success
        result = definitions.resolve_job_def("monthly_review").execute_in_process(
            partition_key=MONTH,
            instance=instance,
            run_config={"ops": {GATE_STEP: {"config": {"accept_gaps": f"the site serves {DAYS} days of March"}}}},
        )
    assert result.success
    checks = {(tuple(e.asset_key.path), e.check_name): e.passed for e in result.get_asset_check_evaluations()}
    conn = duckdb.connect(str(config_path.with_name("whole.duckdb")), read_only=True)
    try:
        names = ("marts.fct_gpu_hourly", "marts.mart_chargeback_reconciliation", "marts.fct_job_usage")
        tables = {name: conn.sql(f"SELECT * FROM {name}").pl() for name in names}
    finally:
        conn.close()
    review = (config_path.parent / "whole_reports" / "2026-03" / "review.html").read_text()
    return {"checks": checks, "review": review, **tables}


def test_undeclared_mig_month_builds_and_reconciles(built: dict) -> None:
    assert all(built["checks"].values()) and len(built["checks"]) >= 8, built["checks"]
    reconciliation = built["marts.mart_chargeback_reconciliation"]
    assert reconciliation.height > 0
    mig_usage = built["marts.fct_job_usage"].filter(pl.col("gpu_model").str.starts_with("A100 "))
    assert mig_usage.height > 0  # pods on MIG slices were charged their share


def test_capacity_is_the_observed_layout_hour_by_hour(built: dict) -> None:
    hourly = built["marts.fct_gpu_hourly"].filter(pl.col("hostname") == MIG_HOST)
    observed = pl.col("hour").is_between(T0, T1, closed="left")
    inside = hourly.filter(observed)
    # Where DCGM reported, the card counts as its MIG instances (3g+2g+1g+1g = one GPU), never also whole.
    assert inside.height > 0 and inside["gpu_i_profile"].is_not_null().all()
    per_card = inside.group_by("gpu", "hour").agg(pl.col("capacity_seconds").sum())
    assert ((per_card["capacity_seconds"] - 3600.0).abs() < 1e-6).all()
    assert (inside["allocated_seconds"] <= inside["capacity_seconds"] + 1e-6).all()
    assert inside.filter(pl.col("gpu_i_profile") == "3g.40gb")["allocated_seconds"].sum() > 0
    # Hours with no samples keep the config's inventory: the GPUs whole.
    outside = hourly.filter(~observed)
    assert outside.height > 0 and outside["gpu_i_profile"].is_null().all()
    assert (outside["capacity_seconds"] == 3600.0).all()


def test_review_says_what_to_change(built: dict) -> None:
    assert f"{MIG_HOST} GPU 0 ran as MIG" in built["review"]
    assert "mig_layout" in built["review"]
