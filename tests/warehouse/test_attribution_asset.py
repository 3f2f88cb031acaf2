"""intermediate.int_gpu_minutes_attributed: computed once per month in DuckDB, read by the marts.

Two simulated days (16 GPUs, 5-minute samples) are landed through the daily Dagster job, then
the month's assets are materialized through Dagster like ``cardhours run`` does.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import AssetKey, DagsterInstance, materialize

import pipelines.assets.intermediate as intermediate_assets
from cardhours.bench.marts import land
from cardhours.bench.marts_build import BUILT, QUIET_RUN_CONFIG
from config import load_config
from pipelines.assets.intermediate import (
    ATTRIBUTED_TABLE,
    SAMPLES_CONSERVED,
    read_attributed,
    samples_conserved_check,
    window_days,
    windows,
)
from pipelines.definitions import ASSETS
from pipelines.resources import CardhoursResource
from pipelines.store import Store
from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA, int_gpu_minutes_attributed_sql
from transforms.marts.fct_job_usage import fct_job_usage

pytestmark = [pytest.mark.slow]

MONTH = date(2026, 9, 1)
START, END = datetime(2026, 9, 1), datetime(2026, 10, 1)


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config_path, _ = land(16, 2, 300, tmp_path_factory.mktemp("attribution"), lambda *_: None)  # runs cross midnight
    return config_path


def build(config_path: Path, keys=BUILT) -> None:
    with DagsterInstance.ephemeral() as instance:
        result = materialize(
            ASSETS,
            selection=[AssetKey(list(k)) for k in keys],
            partition_key=MONTH.isoformat(),
            instance=instance,
            resources={"cardhours": CardhoursResource(config_path=str(config_path))},
            run_config=QUIET_RUN_CONFIG,
        )
    assert result.success


def table(config_path: Path, sql: str) -> pl.DataFrame:
    conn = duckdb.connect(str(load_config(config_path).warehouse.path), read_only=True)
    try:
        return conn.sql(sql).pl()
    finally:
        conn.close()


def direct_attribution(config_path: Path) -> pl.DataFrame:
    """The attribution SQL run directly (what the marts computed before it was stored)."""
    config = load_config(config_path)
    cluster = config.clusters[0]
    hosts = config.inventory_frame().group_by("hostname").agg(pl.col("gpu_fraction").sum()).sort("hostname")
    text, params = int_gpu_minutes_attributed_sql(
        cluster.name,
        START,
        START,
        END,
        cluster.sample_step_seconds,
        hosts["hostname"].to_list(),
        hosts["gpu_fraction"].to_list(),
        config.flags.zero_util_threshold,
    )
    conn = duckdb.connect(str(config.warehouse.path), read_only=True)
    try:
        conn.execute("SET TimeZone = 'UTC'")
        return conn.sql(text, params=params).pl().cast(SCHEMA)
    finally:
        conn.close()


def test_stored_rows_are_the_transform_rows_plus_month_and_a_rerun_is_identical(landed: Path) -> None:
    build(landed)
    first = table(landed, f"SELECT * FROM {ATTRIBUTED_TABLE} ORDER BY ALL")
    assert first.height > 0
    assert list(first.columns) == [*SCHEMA, "month"]
    assert first.get_column("month").unique().to_list() == [MONTH]
    build(landed, keys=[("intermediate", "int_gpu_minutes_attributed")])
    assert table(landed, f"SELECT * FROM {ATTRIBUTED_TABLE} ORDER BY ALL").equals(first)
    config = load_config(landed)
    conn = duckdb.connect(str(config.warehouse.path), read_only=True)
    try:
        stored = read_attributed(Store(conn, config.warehouse.lake), MONTH, config.clusters[0].name)
    finally:
        conn.close()
    assert stored.equals(direct_attribution(landed))


def stored_attribution(config_path: Path) -> pl.DataFrame:
    config = load_config(config_path)
    conn = duckdb.connect(str(config.warehouse.path), read_only=True)
    try:
        return read_attributed(Store(conn, config.warehouse.lake), MONTH, config.clusters[0].name)
    finally:
        conn.close()


def test_day_windows_give_the_rows_of_one_month_query(landed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intermediate_assets, "GPU_DAYS_PER_WINDOW", 16)  # 16 GPUs: one day a window
    build(landed, keys=[("intermediate", "int_gpu_minutes_attributed")])
    assert stored_attribution(landed).equals(direct_attribution(landed))


def test_windows_hold_at_most_their_days_and_one_kind_of_day() -> None:
    assert (window_days(1000), window_days(20_000), window_days(0)) == (10, 1, 10_000)
    gap = {date(2026, 9, 5), date(2026, 9, 6)}  # days without stored hour sums
    cut = windows(START, END, 10, lambda day: day not in gap)
    assert [(low.day, (high - low).days, stored) for low, high, stored in cut] == [
        (1, 4, True),
        (5, 2, False),
        (7, 10, True),
        (17, 10, True),
        (27, 4, True),
    ]
    assert windows(START, datetime(2026, 9, 1, 12), 3, lambda day: True) == [(START, datetime(2026, 9, 1, 12), True)]


def test_fct_job_usage_equals_the_transform_on_directly_computed_attribution(landed: Path) -> None:
    build(landed)
    config = load_config(landed)
    cluster = config.clusters[0]
    jobs = table(landed, "SELECT * EXCLUDE (month) FROM staging.stg_slurm__jobs WHERE month = DATE '2026-09-01'")
    expected = fct_job_usage(
        jobs=jobs,
        attributed=direct_attribution(landed),
        accounts=config.accounts_frame(),
        gpu_models=config.inventory_frame().select("cluster", "hostname", "gpu_model").unique(),
        period_start=START,
        period_end=END,
        step_seconds=cluster.sample_step_seconds,
    ).with_columns(month=pl.lit(MONTH))
    stored = table(landed, "SELECT * FROM marts.fct_job_usage")
    key = ["job_id_raw", "start_time"]
    assert stored.height == expected.height > 0
    assert stored.sort(key).equals(expected.select(stored.columns).cast(stored.schema).sort(key))


def test_samples_conserved_check_fires_only_past_its_tolerance() -> None:
    assert samples_conserved_check({"a": (1_000_000.0 + 0.5, 1_000_000)}).passed
    failed = samples_conserved_check({"a": (1_000_000.0 + 2.0, 1_000_000), "b": (10.0, 10)})
    assert not failed.passed and failed.check_name == SAMPLES_CONSERVED
    assert "a:" in failed.description and "b:" not in failed.description
