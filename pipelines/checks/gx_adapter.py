"""Great Expectations 1.x suites -> Dagster `AssetCheckResult`s, over a polars frame or a DuckDB table.

`run_suite_on_duckdb` (SQL path) runs every expectation as SQL inside DuckDB through GX's SQL
datasource on duckdb-engine; only aggregates and at most PARTIAL_VALUES_KEPT unexpected values
per expectation come back to Python. `run_suite_on_frame` copies a polars frame into pandas: for
job-level / aggregated tables only (refused above `max_rows`, default 5 M rows).
Decision: the pipeline checks `raw.dcgm_samples` (and `raw.slurm_sacct`) on the SQL path, one
day partition per check, without sampling.

Measured (2 vCPU; GX 1.24.1, DuckDB 2.0.1; a `raw.dcgm_samples`-shaped table of 20 M rows =
10 days x 2 M built with range(); `raw_dcgm_samples_suite()`, 17 expectations; one fresh process
per case; peak RSS = ru_maxrss; the imports alone bring a process to ~363 MiB):

    SQL, one day (2 M rows)              0.21-0.33 s   peak RSS 391 MiB
    SQL, whole table (20 M rows)         0.15 s        peak RSS 385 MiB
    SQL, one day, every row bad          0.78 s        peak RSS 610 MiB (pipeline conn. open)
    SQL, one day, sample_rows=100_000    0.47-0.85 s   peak RSS 924 MiB
    pandas, 1 M-row frame (144 MB)       0.67-0.86 s   peak RSS 1.13 GiB (759 MiB before call)
    pandas, 5 M-row frame (722 MB)       3.06 s        peak RSS 3.6 GiB (2.2 GiB before call)

Valid data is cheap because DuckDB skips row groups on min/max/null statistics for the range and
not-null predicates; bad data costs a real scan of the referenced columns. 3 bad rows injected on
one day: that day fails naming uuid/sm_active/power_w (unexpected_count 3) in 0.35 s, the next
day passes. The daily batch definition first lists distinct days over the whole table (0.045 s
at 20 M rows). Sampling costs more than the whole day here (GX re-runs the ORDER BY ... LIMIT
subquery per expectation and its column probe materialises the sample).

Connections: DuckDB allows several connections to one file in one process only with the same
configuration (`read_only`, settings, and the `custom_user_agent` duckdb-engine always adds),
else "Can't open a connection to same database file with a different configuration than
existing connections". GX's connections are therefore cursors of one parent connection: the
caller's (`connection=`, any configuration) or a default read-write `duckdb.connect(path)`, which
coexists with a plain `duckdb.connect(path)` held by the pipeline but not with a `read_only=True`
or configured one (pass that one as `connection=`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Any

import dagster as dg
import duckdb
import great_expectations as gx
import great_expectations.expectations as gxe
import pandas as pd
import polars as pl
import sqlalchemy as sa
from duckdb_engine import ConnectionWrapper
from great_expectations.core.expectation_validation_result import ExpectationSuiteValidationResult
from great_expectations.data_context.types.base import (
    DataContextConfig,
    InMemoryStoreBackendDefaults,
    ProgressBarsConfig,
)
from great_expectations.exceptions.exceptions import NoAvailableBatchesError
from sqlalchemy.dialects import postgresql

DEFAULT_MAX_FRAME_ROWS = 5_000_000
PARTIAL_VALUES_KEPT = 10
RESULT_FORMAT = {"result_format": "BASIC", "partial_unexpected_count": PARTIAL_VALUES_KEPT}
Severity = dg.AssetCheckSeverity


class FrameTooLargeError(ValueError):
    """A frame too big for the in-memory pandas path."""


def run_suite_on_frame(
    suite: gx.ExpectationSuite,
    frame: pl.DataFrame,
    asset_key: dg.AssetKey | Sequence[str],
    check_name: str,
    *,
    severity: Severity = Severity.ERROR,
    max_rows: int = DEFAULT_MAX_FRAME_ROWS,
) -> dg.AssetCheckResult:
    """Validate an in-memory frame (job-level / aggregated tables only: it is copied into pandas)."""
    if frame.height > max_rows:
        raise FrameTooLargeError(
            f"frame has {frame.height:,} rows, over the pandas-path limit of {max_rows:,}: "
            "write it to DuckDB and validate it with run_suite_on_duckdb (the SQL path) instead"
        )
    started = time.perf_counter()
    source = _context().data_sources.add_pandas(name="frame")
    batch = source.add_dataframe_asset(name="frame").add_batch_definition_whole_dataframe("all")
    result = batch.get_batch(batch_parameters={"dataframe": frame.to_pandas()}).validate(
        suite, result_format=RESULT_FORMAT
    )
    return _check_result(
        result, asset_key, check_name, severity, frame.height, started, {"path": "pandas"}
    )


def run_suite_on_duckdb(
    suite: gx.ExpectationSuite,
    database_path: str,
    table: str,
    asset_key: dg.AssetKey | Sequence[str],
    check_name: str,
    where_day: date | None = None,
    sample_rows: int | None = None,
    *,
    severity: Severity = Severity.ERROR,
    connection: duckdb.DuckDBPyConnection | None = None,
    day_column: str = "day",
) -> dg.AssetCheckResult:
    """Validate `schema.table` inside DuckDB (GX SQL datasource via duckdb-engine); rows stay in DuckDB.

    `where_day` restricts the batch to one day partition of `day_column`; `sample_rows` validates
    a deterministic spread of at most that many rows. Pass the pipeline's open `connection` to
    the same file to share it (any configuration); otherwise a default-configured read-write
    connection to `database_path` is opened (compatible with plain `duckdb.connect(path)`).
    """
    if where_day is not None and (isinstance(where_day, datetime) or not isinstance(where_day, date)):
        raise TypeError(f"where_day must be a datetime.date, got {where_day!r}")
    positive_int = isinstance(sample_rows, int) and not isinstance(sample_rows, bool) and sample_rows > 0
    if sample_rows is not None and not positive_int:
        raise ValueError(f"sample_rows must be a positive int, got {sample_rows!r}")
    schema, _, name = table.rpartition(".")
    started = time.perf_counter()
    parent = connection if connection is not None else _connect(database_path)
    source = None
    try:
        source = _context().data_sources.add_sql(
            name="duckdb",
            connection_string=f"duckdb:///{database_path}",
            kwargs={"creator": _creator(parent, schema or "main")},
        )
        # GX knows no DuckDB dialect, so it has no SQL for regex expectations (it logs "Regex is
        # not supported" and fails them). duckdb-engine is a PostgreSQL-derived dialect and DuckDB
        # implements PostgreSQL's `~` / `!~` regex operators (RE2), so use GX's PostgreSQL forms.
        source.get_execution_engine().dialect_module = postgresql
        day = where_day.isoformat() if where_day else "all"
        extra = {"path": "sql", "table": table, "day": day, "sample_rows": sample_rows}
        try:
            batch = _duckdb_batch(source, name, day_column, where_day, sample_rows)
            rows = _row_count(batch)
        except NoAvailableBatchesError:  # the daily batch definition found no such day
            batch, rows = None, 0
        if batch is None or (where_day is not None and rows == 0):
            # A day partition with no rows is a failed load, not a vacuously valid one.
            return dg.AssetCheckResult(
                passed=False, asset_key=asset_key, check_name=check_name, severity=severity,
                description=f"no rows in {table} for {day_column}={day}",
                metadata={**extra, "evaluated_rows": 0, "run_seconds": _since(started)},
            )
        result = batch.validate(suite, result_format=RESULT_FORMAT)
        return _check_result(result, asset_key, check_name, severity, rows, started, extra)
    finally:
        if source is not None:
            source.get_execution_engine().engine.dispose()
            source.get_engine().dispose()
        if connection is None:
            parent.close()


def _connect(database_path: str) -> duckdb.DuckDBPyConnection:
    try:
        return duckdb.connect(database_path)
    except duckdb.ConnectionException as error:
        if "different configuration" not in str(error):
            raise
        raise duckdb.ConnectionException(
            f"{error}. This process already holds {database_path} with another configuration "
            "(read_only or settings): pass that connection as run_suite_on_duckdb(..., connection=...)"
        ) from error


def _context() -> Any:
    """A fresh in-memory GX context; analytics and progress bars off in its own config, no files."""
    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
    )
    return gx.get_context(mode="ephemeral", project_config=config)


class _AutocommitConnection(ConnectionWrapper):
    """SQLAlchemy's BEGIN/COMMIT/ROLLBACK as no-ops: each (read-only) statement autocommits.

    duckdb-engine BEGINs a DuckDB transaction per SQLAlchemy connection and rolls it back on close,
    but GX fetches after closing (`execute_query(...).fetchall()`) and DuckDB drops an open result
    set on ROLLBACK: every metric came back empty.
    """

    def begin(self) -> None:
        return None

    def commit(self) -> None:
        return None

    def rollback(self) -> None:
        return None


def _creator(parent: duckdb.DuckDBPyConnection, schema: str) -> Callable[[], ConnectionWrapper]:
    """SQLAlchemy `creator`: cursors of `parent`, so no connection with a new configuration.

    The schema goes on the session's search_path (a bound parameter) because duckdb-engine's
    reflection fails here and GX's fallback column probe drops the table's schema.
    """

    def create() -> ConnectionWrapper:
        cursor = parent.cursor()
        cursor.execute("SET search_path = ?", [schema])
        return _AutocommitConnection(cursor)

    return create


def _duckdb_batch(
    source: Any, name: str, day_column: str, day: date | None, sample_rows: int | None
) -> Any:
    if sample_rows is None:
        asset = source.add_table_asset(name=name, table_name=name)
        if day is None:
            return asset.add_batch_definition_whole_table("all").get_batch()
        daily = asset.add_batch_definition_daily("daily", column=day_column, validate_batchable=False)
        return daily.get_batch(batch_parameters={"year": day.year, "month": day.month, "day": day.day})
    # GX's fluent API exposes no row sampler, so a sample is a query asset. Its text is compiled
    # by SQLAlchemy from typed values (a checked `date`, a checked positive `int`), never
    # formatted by hand; ordering by a hash of rowid spreads the sample over the whole day.
    query = sa.select(sa.text("*")).select_from(sa.table(name))
    if day is not None:
        query = query.where(sa.column(day_column) == day)
    query = query.order_by(sa.func.hash(sa.literal_column("rowid"))).limit(sample_rows)
    sql = str(query.compile(dialect=source.get_engine().dialect, compile_kwargs={"literal_binds": True}))
    asset = source.add_query_asset(name=f"{name}_sample", query=sql)
    return asset.add_batch_definition_whole_table("all").get_batch()


def _row_count(batch: Any) -> int:
    counted = batch.validate(gxe.ExpectTableRowCountToBeBetween(min_value=0))
    return int(counted.result["observed_value"])


def _check_result(
    result: ExpectationSuiteValidationResult,
    asset_key: dg.AssetKey | Sequence[str],
    check_name: str,
    severity: Severity,
    rows: int,
    started: float,
    extra: dict[str, Any],
) -> dg.AssetCheckResult:
    failed = [_failure(item) for item in result.results if not item.success]
    metadata = {
        **extra,
        "suite": result.suite_name,
        "expectations": len(result.results),
        "failed_count": len(failed),
        "failed_expectations": failed,
        "evaluated_rows": rows,
        "run_seconds": _since(started),
    }
    names = ", ".join(item["expectation"] for item in failed)
    return dg.AssetCheckResult(
        passed=bool(result.success), asset_key=asset_key, check_name=check_name, severity=severity,
        description=f"failed: {names}" if failed else None, metadata=metadata,
    )


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 4)


def _failure(item: Any) -> dict[str, Any]:
    config = item.expectation_config
    column = config.kwargs.get("column")
    found = item.result or {}
    failure: dict[str, Any] = {"expectation": f"{config.type}({column})" if column else config.type}
    for key in ("unexpected_count", "unexpected_percent", "observed_value"):
        if key in found:
            failure[key] = _plain(found[key])
    if "partial_unexpected_list" in found:
        kept = found["partial_unexpected_list"][:PARTIAL_VALUES_KEPT]
        failure["partial_unexpected_list"] = [_plain(value) for value in kept]
    if errors := _exception_messages(item.exception_info):
        failure["exception"] = "; ".join(errors)[:500]
    return failure


def _exception_messages(info: Any) -> list[str]:
    """GX reports one error dict, or a dict of them keyed by the metric that raised."""
    if not isinstance(info, dict):
        return []
    if "raised_exception" in info:
        return [str(info.get("exception_message"))] if info["raised_exception"] else []
    return [message for nested in info.values() for message in _exception_messages(nested)]


def _plain(value: Any) -> Any:
    """A JSON-safe version of a GX observed value (numpy scalars, dates; NaN/NaT/NA -> None)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if not isinstance(value, dict) and pd.isna(value):
        return None
    if isinstance(value, float):
        return value
    item = getattr(value, "item", None)
    return _plain(item()) if callable(item) and not isinstance(value, (date, datetime)) else str(value)
