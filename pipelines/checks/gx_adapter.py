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
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

import dagster as dg
import duckdb
import great_expectations as gx
import polars as pl
from great_expectations.data_context.types.base import (
    DataContextConfig,
    InMemoryStoreBackendDefaults,
    ProgressBarsConfig,
)
from great_expectations.exceptions.exceptions import NoAvailableBatchesError
from sqlalchemy.dialects import postgresql

from pipelines.checks.gx_duckdb import connect_parent, cursor_creator, duckdb_batch, row_count
from pipelines.checks.gx_results import PARTIAL_VALUES_KEPT, Severity, check_result, since

DEFAULT_MAX_FRAME_ROWS = 5_000_000
RESULT_FORMAT = {"result_format": "BASIC", "partial_unexpected_count": PARTIAL_VALUES_KEPT}
__all__ = ["DEFAULT_MAX_FRAME_ROWS", "FrameTooLargeError", "run_suite_on_duckdb", "run_suite_on_frame"]


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
    return check_result(result, asset_key, check_name, severity, frame.height, started, {"path": "pandas"})


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
    parent = connection if connection is not None else connect_parent(database_path)
    source = None
    try:
        source = _context().data_sources.add_sql(
            name="duckdb",
            connection_string=f"duckdb:///{database_path}",
            kwargs={"creator": cursor_creator(parent, schema or "main")},
        )
        # GX knows no DuckDB dialect, so it has no SQL for regex expectations (it logs "Regex is
        # not supported" and fails them). duckdb-engine is a PostgreSQL-derived dialect and DuckDB
        # implements PostgreSQL's `~` / `!~` regex operators (RE2), so use GX's PostgreSQL forms.
        source.get_execution_engine().dialect_module = postgresql
        day = where_day.isoformat() if where_day else "all"
        extra = {"path": "sql", "table": table, "day": day, "sample_rows": sample_rows}
        try:
            batch = duckdb_batch(source, name, day_column, where_day, sample_rows)
            rows = row_count(batch)
        except NoAvailableBatchesError:  # the daily batch definition found no such day
            batch, rows = None, 0
        if batch is None or (where_day is not None and rows == 0):
            # A day partition with no rows is a failed load, not a vacuously valid one.
            return dg.AssetCheckResult(
                passed=False,
                asset_key=asset_key,
                check_name=check_name,
                severity=severity,
                description=f"no rows in {table} for {day_column}={day}",
                metadata={**extra, "evaluated_rows": 0, "run_seconds": since(started)},
            )
        result = batch.validate(suite, result_format=RESULT_FORMAT)
        return check_result(result, asset_key, check_name, severity, rows, started, extra)
    finally:
        if source is not None:
            source.get_execution_engine().engine.dispose()
            source.get_engine().dispose()
        if connection is None:
            parent.close()


def _context() -> Any:
    """A fresh in-memory GX context; analytics and progress bars off in its own config, no files."""
    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
    )
    return gx.get_context(mode="ephemeral", project_config=config)
