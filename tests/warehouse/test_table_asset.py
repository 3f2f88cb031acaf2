"""The asset pattern (pipelines/table_asset.py) on a real warehouse through Dagster: the period's
partition written with its period column, a monthly asset reading a daily table's days of the
month, reruns replacing, and a read the asset did not declare refused with a message."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import materialize

from pipelines.resources import CardhoursResource
from pipelines.step import Step
from pipelines.table_asset import Built, table_asset
from pipelines.tables import FCT_JOB_USAGE, RAW_KUBE_SERIES, STG_KUBE__JOBS, STG_KUBE__PODS
from tests.warehouse.test_review_assets import CONFIG  # a one-cluster site
from warehouse import connect, replace_partition

pytestmark = [pytest.mark.slow]  # Dagster runs

MONTH = date(2026, 9, 1)


def site(root: Path) -> Path:
    """A config and a warehouse holding raw.kube_series on the days around September 2026."""
    config = root / "cardhours.toml"
    config.write_text(CONFIG)
    with connect(root / "wh" / "cardhours.duckdb") as conn:
        for day in (date(2026, 8, 31), date(2026, 9, 1), date(2026, 9, 30), date(2026, 10, 1)):
            series = pl.DataFrame({"cluster": ["c1"], "day": [day], "pod": [f"pod-{day:%m%d}"]})
            replace_partition(conn, "raw.kube_series", series, {"cluster": "c1", "day": day})
    return config


def run(config: Path, asset):
    resource = CardhoursResource(config_path=str(config))
    return materialize(
        [asset], partition_key=MONTH.isoformat(), resources={"cardhours": resource}, raise_on_error=False
    )


def stored_jobs(config: Path) -> list[tuple]:
    conn = duckdb.connect(str(config.parent / "wh" / "cardhours.duckdb"), read_only=True)
    try:
        return conn.execute("SELECT month, cluster, job_id FROM staging.stg_kube__jobs ORDER BY ALL").fetchall()
    finally:
        conn.close()


@table_asset(STG_KUBE__JOBS, reads=[RAW_KUBE_SERIES, STG_KUBE__PODS], description="one job per pod of the month")
def jobs_of_pods(step: Step) -> Built:
    series = step.read(RAW_KUBE_SERIES, cluster="c1", order_by="day")
    jobs = series.select("cluster", pl.col("pod").alias("job_id"))  # no month column: the pattern adds it
    return Built(jobs, metadata={"days": [str(day) for day in series.get_column("day")]})


def test_the_months_partition_is_written_with_its_period_and_replaced_on_a_rerun(tmp_path: Path) -> None:
    config = site(tmp_path)
    for _ in range(2):
        result = run(config, jobs_of_pods)
        assert result.success
        materialization = result.get_asset_materialization_events()[0].materialization
        metadata = {key: value.value for key, value in materialization.metadata.items()}
        assert metadata == {"rows": 2, "month": "2026-09-01", "days": ["2026-09-01", "2026-09-30"]}
    assert stored_jobs(config) == [(MONTH, "c1", "pod-0901"), (MONTH, "c1", "pod-0930")]


@table_asset(STG_KUBE__JOBS, reads=[STG_KUBE__PODS], description="reads a table it does not declare")
def undeclared_read(step: Step) -> pl.DataFrame:
    return step.read(FCT_JOB_USAGE).select("cluster", "job_id")


@table_asset(STG_KUBE__JOBS, reads=[STG_KUBE__PODS], description="queries a table it does not declare")
def undeclared_query(step: Step) -> pl.DataFrame:
    return step.sql("SELECT cluster, pod AS job_id FROM raw.kube_series WHERE day = ?", [MONTH])


@pytest.mark.parametrize(
    ("asset", "table"), [(undeclared_read, "marts.fct_job_usage"), (undeclared_query, "raw.kube_series")]
)
def test_a_read_the_asset_does_not_declare_fails_and_writes_nothing(tmp_path: Path, asset, table: str) -> None:
    config = site(tmp_path)
    result = run(config, asset)
    assert not result.success
    failure = next(event for event in result.all_events if event.is_step_failure)
    assert failure.step_failure_data.error.cause.message == (
        f"pipelines.step.UndeclaredReadError: asset staging/stg_kube__jobs reads {table} but does not declare it: "
        "add it to reads= of its @table_asset, so Dagster shows where its data comes from\n"
    )
    assert stored_jobs(config) == []
