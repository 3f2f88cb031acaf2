"""The chargeback export files of a billing month, written atomically:

- ``<dir>/YYYY-MM/chargeback_focus.csv`` and ``.parquet``: FOCUS 1.2 columns then ``x_`` ones
  (contracts.chargeback FOCUS_COLUMNS + X_COLUMNS, in that order). CSV: timestamps
  ``YYYY-MM-DDTHH:MM:SSZ``, decimals as plain decimal text (``2.500000``, ``12.40``), null as
  an empty field; text cells through reports.csv_guard (a ``'`` before what a spreadsheet would
  run as a formula). Parquet: decimals as decimal128, timestamps as UTC timestamps, text raw.
- ``<dir>/YYYY-MM/chargeback_jobs.csv``: the per-job detail (fct_chargeback_jobs columns),
  written as the FOCUS CSV is.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import date
from pathlib import Path

import duckdb
import polars as pl

from contracts.chargeback import FOCUS_COLUMNS, FOCUS_ORDER, JOBS_ORDER, JOBS_SCHEMA, X_COLUMNS
from reports.csv_guard import guard_text_columns
from reports.write import write_atomic_with
from warehouse import read_frame

_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")
FOCUS_CSV, FOCUS_PARQUET, JOBS_CSV = "chargeback_focus.csv", "chargeback_focus.parquet", "chargeback_jobs.csv"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
EXPORT_COLUMNS = [*FOCUS_COLUMNS, *X_COLUMNS]


def focus_frame(focus: pl.DataFrame) -> pl.DataFrame:
    """fct_chargeback_focus rows -> the export columns in order (typed; timestamps UTC)."""
    ordered = focus.sort(FOCUS_ORDER, nulls_last=True)
    return ordered.select(
        pl.col(c).dt.replace_time_zone("UTC") if isinstance(t, pl.Datetime) else pl.col(c)
        for c, t in {**FOCUS_COLUMNS, **X_COLUMNS}.items()
    )


def _csv_text(frame: pl.DataFrame) -> pl.DataFrame:
    """Text columns guarded (before the timestamps become text), timestamps formatted."""
    return guard_text_columns(frame).with_columns(pl.col(pl.Datetime).dt.strftime(TIME_FORMAT))


def write_chargeback_files(focus: pl.DataFrame, jobs: pl.DataFrame, reports_dir: Path, month: str) -> dict[str, Path]:
    """Write the billing month's three files; returns {"focus_csv", "focus_parquet", "jobs_csv"} paths."""
    if not _MONTH.fullmatch(month):
        raise ValueError(f"month must be YYYY-MM, got {month!r}")
    folder = Path(reports_dir) / month
    export = focus_frame(focus)
    detail = jobs.select(list(JOBS_SCHEMA)).sort(JOBS_ORDER, nulls_last=True)
    return {
        "focus_csv": write_atomic_with(folder / FOCUS_CSV, lambda p: _csv_text(export).write_csv(p)),
        "focus_parquet": write_atomic_with(folder / FOCUS_PARQUET, lambda p: export.write_parquet(p)),
        "jobs_csv": write_atomic_with(folder / JOBS_CSV, lambda p: _csv_text(detail).write_csv(p)),
    }


def export_billing_month(
    conn: duckdb.DuckDBPyConnection, reports_dir: Path, billing: date, closed: Collection[date]
) -> dict[str, Path]:
    """Write the files of billing month ``billing`` (first day); ``closed``: the closed billing months."""
    focus_table, jobs_table = (
        ("chargeback_ledger", "chargeback_ledger_jobs")
        if billing in closed
        else ("fct_chargeback_focus", "fct_chargeback_jobs")
    )  # fixed names, no values
    focus = read_frame(conn, f"SELECT * FROM marts.{focus_table} WHERE billing_month = ?", [billing])
    jobs = read_frame(conn, f"SELECT * FROM marts.{jobs_table} WHERE billing_month = ?", [billing])
    return write_chargeback_files(focus, jobs, reports_dir, f"{billing:%Y-%m}")
