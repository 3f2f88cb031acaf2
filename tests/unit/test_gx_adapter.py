"""GX adapter: suites on polars frames (pandas path) and on DuckDB day partitions (SQL path)."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import duckdb_engine
import polars as pl
import pytest

from contracts.schemas import RAW_SACCT_SCHEMA, RAW_SAMPLE_SCHEMA
from pipelines.checks import (
    DEFAULT_MAX_FRAME_ROWS,
    FrameTooLargeError,
    raw_dcgm_samples_suite,
    raw_slurm_sacct_suite,
    run_suite_on_duckdb,
    run_suite_on_frame,
    suite_from_schema,
)
from pipelines.checks.gx_adapter import _context

KEY = dg.AssetKey(["raw", "dcgm_samples"])
DAY1, DAY2 = date(2024, 3, 1), date(2024, 3, 2)
PER_DAY = 21  # rows per day in the DuckDB fixture: 20 for a whole GPU + 1 MIG instance


def samples(day: date, n: int = 4) -> pl.DataFrame:
    """n valid rows for one GPU plus one MIG row whose device-level metrics are null."""
    rows = [
        {
            "cluster": "c1",
            "day": day,
            "ts": datetime.combine(day, time()) + timedelta(seconds=30 * i),
            "hostname": "gpu-01",
            "gpu": 0,
            "uuid": "GPU-aaaa",
            "model_name": "NVIDIA H100 80GB HBM3",
            "pci_bus_id": "00000000:1B:00.0",
            "device": "nvidia0",
            "hpc_job": "1001",
            "gpu_util": 87.0,
            "gr_engine_active": 0.9,
            "sm_active": 0.8,
            "sm_occupancy": 0.4,
            "tensor_active": 0.3,
            "dram_active": 0.5,
            "fb_used_mib": 40000.0,
            "fb_free_mib": 41000.0,
            "power_w": 550.0,
            "energy_mj": 1.0e9 + i,
        }
        for i in range(n)
    ]
    mig = {
        **rows[0],
        "gpu": 1,
        "uuid": "GPU-bbbb",
        "gpu_i_id": 2,
        "gpu_i_profile": "3g.40gb",
        "gpu_util": None,
        "power_w": None,
        "energy_mj": None,
    }
    return pl.DataFrame([*rows, mig], schema=RAW_SAMPLE_SCHEMA)


def failures(result: dg.AssetCheckResult) -> dict[str, dict]:
    return {item["expectation"]: item for item in result.metadata["failed_expectations"].value}


def test_good_frame_passes_with_metadata() -> None:
    frame = samples(DAY1)
    result = run_suite_on_frame(raw_dcgm_samples_suite(), frame, KEY, "raw_suite")
    assert result.passed is True
    assert result.asset_key == KEY and result.check_name == "raw_suite"
    assert result.severity == dg.AssetCheckSeverity.ERROR
    meta = {name: value.value for name, value in result.metadata.items()}
    assert meta["expectations"] == 17 and meta["failed_count"] == 0
    assert meta["failed_expectations"] == [] and meta["evaluated_rows"] == frame.height
    assert meta["path"] == "pandas" and 0 <= meta["run_seconds"] < 60


@pytest.mark.parametrize(
    ("column", "value", "failing"),
    [
        ("sm_active", 1.25, "expect_column_values_to_be_between(sm_active)"),
        ("power_w", 3000.5, "expect_column_values_to_be_between(power_w)"),
        ("fb_free_mib", -1.0, "expect_column_values_to_be_between(fb_free_mib)"),
        ("hostname", None, "expect_column_values_to_not_be_null(hostname)"),
        ("day", None, "expect_column_values_to_not_be_null(day)"),
    ],
)
def test_bad_value_fails_and_names_expectation_and_column(column: str, value: object, failing: str) -> None:
    frame = samples(DAY1).with_columns(
        pl.when(pl.int_range(pl.len()) == 1).then(pl.lit(value)).otherwise(pl.col(column)).alias(column)
    )
    warn = dg.AssetCheckSeverity.WARN
    result = run_suite_on_frame(raw_dcgm_samples_suite(), frame, KEY, "raw_suite", severity=warn)
    assert result.passed is False and result.severity == dg.AssetCheckSeverity.WARN
    assert list(failures(result)) == [failing]
    assert failures(result)[failing]["unexpected_count"] == 1
    assert failures(result)[failing]["partial_unexpected_list"] == [value]
    assert failing in (result.description or "")


def test_missing_column_fails_on_column_list() -> None:
    frame = samples(DAY1).drop("dram_active")
    failed = failures(run_suite_on_frame(raw_dcgm_samples_suite(), frame, KEY, "raw_suite"))
    observed = failed["expect_table_columns_to_match_ordered_list"]["observed_value"]
    assert observed == [name for name in RAW_SAMPLE_SCHEMA if name != "dram_active"]
    assert "expect_column_values_to_be_between(dram_active)" in failed


def test_row_limit_guard_points_to_sql_path() -> None:
    frame = samples(DAY1)
    with pytest.raises(FrameTooLargeError, match="run_suite_on_duckdb"):
        run_suite_on_frame(raw_dcgm_samples_suite(), frame, KEY, "c", max_rows=frame.height - 1)
    assert run_suite_on_frame(raw_dcgm_samples_suite(), frame, KEY, "c", max_rows=frame.height).passed
    too_big = pl.DataFrame({"x": pl.int_range(DEFAULT_MAX_FRAME_ROWS + 1, eager=True)})
    with pytest.raises(FrameTooLargeError, match="5,000,000"):
        run_suite_on_frame(raw_dcgm_samples_suite(), too_big, KEY, "c")


def sacct(job_ids: list[str]) -> pl.DataFrame:
    row = {name: "x" for name in RAW_SACCT_SCHEMA} | {"cluster": "c1", "day": DAY1, "source": "file"}
    return pl.DataFrame(
        [row | {"job_id": job_id, "line_no": i} for i, job_id in enumerate(job_ids)], schema=RAW_SACCT_SCHEMA
    )


GOOD_JOB_IDS = ["4242", "4242.batch", "4242.extern", "4242.0", "77_3", "77_[1-9%2]", "90+1.batch"]


def test_sacct_suite_job_id_regex() -> None:
    suite = raw_slurm_sacct_suite
    assert run_suite_on_frame(suite(), sacct(GOOD_JOB_IDS), ["raw", "slurm_sacct"], "c").passed
    bad_frame = sacct([*GOOD_JOB_IDS, "abc", "12 .batch"])
    bad = failures(run_suite_on_frame(suite(), bad_frame, ["raw", "slurm_sacct"], "c"))
    assert bad["expect_column_values_to_match_regex(job_id)"]["partial_unexpected_list"] == ["abc", "12 .batch"]


def test_suite_from_schema_columns_and_unknown_key() -> None:
    suite = suite_from_schema("t", {"a": pl.Int64(), "b": pl.String()}, non_null=["b"])
    assert suite.expectations[0].column_list == ["a", "b"]
    assert [getattr(e, "column", None) for e in suite.expectations] == [None, "b"]
    with pytest.raises(ValueError, match="not in the schema"):
        suite_from_schema("t", {"a": pl.Int64()}, non_null=["nope"])


def test_context_is_quiet_and_ignores_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GX_ANALYTICS_ENABLED", "True")
    context = _context()
    assert context.mode == "ephemeral"
    assert context.variables.analytics_enabled is False
    assert context.progress_bars.globally is False and context.progress_bars.metric_calculations is False


@pytest.fixture
def warehouse(tmp_path: Path):
    """Two days of samples in a DuckDB file, held open like the pipeline does.

    Day 2 has one out-of-range sm_active and one null uuid (on different rows).
    """
    path = str(tmp_path / "wh" / "cardhours.duckdb")
    Path(path).parent.mkdir()
    day2 = samples(DAY2, n=PER_DAY - 1).with_columns(
        sm_active=pl.when(pl.int_range(pl.len()) == 3).then(1.5).otherwise(pl.col("sm_active")),
        uuid=pl.when(pl.int_range(pl.len()) == 7).then(None).otherwise(pl.col("uuid")),
    )
    two_days = pl.concat([samples(DAY1, n=PER_DAY - 1), day2])  # noqa: F841  (read by name by DuckDB in the SQL below)
    sacct_rows = sacct([*GOOD_JOB_IDS, "x1"])  # noqa: F841  (read by name by DuckDB in the SQL below)
    pipeline = duckdb.connect(path)
    pipeline.execute("CREATE SCHEMA raw")
    pipeline.execute("CREATE TABLE raw.dcgm_samples AS SELECT * FROM two_days")
    pipeline.execute("CREATE TABLE raw.slurm_sacct AS SELECT * FROM sacct_rows")
    yield path, pipeline
    pipeline.close()


def run_sql(path: str, day: date | None, **kwargs) -> dg.AssetCheckResult:
    suite = raw_dcgm_samples_suite()
    return run_suite_on_duckdb(suite, path, "raw.dcgm_samples", KEY, "raw_suite", where_day=day, **kwargs)


def test_sql_path_checks_one_day_at_a_time(warehouse) -> None:
    path, pipeline = warehouse  # the pipeline's own read-write connection stays open throughout
    day1 = run_sql(path, DAY1)
    assert day1.passed is True
    assert day1.metadata["evaluated_rows"].value == PER_DAY and day1.metadata["day"].value == "2024-03-01"
    assert day1.metadata["path"].value == "sql" and day1.metadata["expectations"].value == 17
    day2 = run_sql(path, DAY2)
    assert day2.passed is False and day2.metadata["evaluated_rows"].value == PER_DAY
    failed = failures(day2)
    assert set(failed) == {
        "expect_column_values_to_be_between(sm_active)",
        "expect_column_values_to_not_be_null(uuid)",
    }
    assert failed["expect_column_values_to_be_between(sm_active)"]["partial_unexpected_list"] == [1.5]
    assert failed["expect_column_values_to_not_be_null(uuid)"]["unexpected_count"] == 1
    whole = run_sql(path, None)
    assert whole.passed is False and whole.metadata["evaluated_rows"].value == 2 * PER_DAY
    assert pipeline.execute("SELECT count(*) FROM raw.dcgm_samples").fetchone() == (2 * PER_DAY,)


def test_sql_path_regex_runs_in_duckdb(warehouse) -> None:
    path, _ = warehouse
    suite = raw_slurm_sacct_suite()
    result = run_suite_on_duckdb(suite, path, "raw.slurm_sacct", ["raw", "slurm_sacct"], "c", DAY1)
    assert list(failures(result)) == ["expect_column_values_to_match_regex(job_id)"]
    assert failures(result)["expect_column_values_to_match_regex(job_id)"]["partial_unexpected_list"] == ["x1"]


@pytest.mark.parametrize("sample_rows", [None, 5])
def test_sql_path_empty_day_fails(warehouse, sample_rows: int | None) -> None:
    result = run_sql(warehouse[0], date(2024, 3, 9), sample_rows=sample_rows)
    assert result.passed is False and result.metadata["evaluated_rows"].value == 0
    assert result.description == "no rows in raw.dcgm_samples for day=2024-03-09"


def test_sql_path_sample_and_argument_checks(warehouse) -> None:
    sampled = run_sql(warehouse[0], DAY2, sample_rows=3)
    assert sampled.metadata["evaluated_rows"].value == 3 and sampled.metadata["sample_rows"].value == 3
    with pytest.raises(ValueError, match="sample_rows"):
        run_sql(warehouse[0], DAY2, sample_rows=0)
    with pytest.raises(TypeError, match="datetime.date"):
        run_sql(warehouse[0], datetime(2024, 3, 2))


def test_sql_path_fetches_results_not_rows(warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    fetched: list[int] = []

    def fetchall(cursor: duckdb_engine.CursorWrapper) -> list:
        rows = cursor._CursorWrapper__c.fetchall()
        fetched.append(len(rows))
        return rows

    monkeypatch.setattr(duckdb_engine.CursorWrapper, "fetchall", fetchall, raising=False)
    assert run_sql(warehouse[0], None).metadata["evaluated_rows"].value == 2 * PER_DAY
    assert fetched and max(fetched) <= 10  # aggregates, day list, <= 10 unexpected values each


def test_sql_path_with_read_only_connection_needs_it_passed(warehouse) -> None:
    path, pipeline = warehouse
    pipeline.close()
    reader = duckdb.connect(path, read_only=True)
    try:
        with pytest.raises(duckdb.ConnectionException, match="pass that connection"):
            run_sql(path, DAY1)
        assert run_sql(path, DAY1, connection=reader).passed is True
        assert reader.execute("SELECT count(*) FROM raw.dcgm_samples").fetchone() == (2 * PER_DAY,)
    finally:
        reader.close()


def test_no_files_in_cwd(warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    run_sql(warehouse[0], DAY1)
    run_suite_on_frame(raw_dcgm_samples_suite(), samples(DAY1), KEY, "c")
    assert list(cwd.iterdir()) == []
