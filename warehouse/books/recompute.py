"""Recompute a billing month's chargeback and compare it with the stored marts, to the cent.

``cardhours close`` calls ``recompute_problems`` inside its transaction, before it freezes
anything: every charge month booked in the billing month is computed again from
marts.fct_job_usage and the config with the assets' own code (warehouse/books/chargeback_rows.py),
and its job lines, FOCUS rows and reconciliation are compared with marts.fct_chargeback_jobs,
marts.fct_chargeback_focus and marts.mart_chargeback_reconciliation, every column exactly
(decimals to their last digit: cents for money). A difference names the table, the row, the
column, and the stored and recomputed values.
"""

from __future__ import annotations

from datetime import date

import duckdb
import polars as pl

from config import Config
from transforms.marts.fct_chargeback_focus import ROW_KEY
from transforms.marts.fct_chargeback_jobs import LINE_KEY
from warehouse import read_frame
from warehouse.books.chargeback_rows import ChargeRows, charge_lines, focus_rows, job_rows, reconciliation_rows
from warehouse.books.ledger import charge_months
from warehouse.books.row_labels import describe

SHOWN = 10
KEYS = {
    "marts.fct_chargeback_jobs": ["billing_month", "charge_month", "charge_class", *LINE_KEY],
    "marts.fct_chargeback_focus": ["billing_month", "charge_month", "ChargeClass", *ROW_KEY],
    "marts.mart_chargeback_reconciliation": ["cluster", "month"],
}


def _as_text(frame: pl.DataFrame, columns: list[str], keys: list[str], schema: pl.Schema) -> pl.DataFrame:
    """Values as text (exact: decimals keep their scale), the key columns in the recomputed types."""
    return frame.select(pl.col(c).cast(schema[c]) if c in keys else pl.col(c).cast(pl.String) for c in columns)


def row_differences(table: str, stored: pl.DataFrame, recomputed: pl.DataFrame) -> list[str]:
    """Every difference between the stored and the recomputed rows of ``table``, one line each."""
    columns = recomputed.columns
    lacking = [c for c in columns if c not in stored.columns]
    if lacking:
        return [f"{table} has no column {', '.join(lacking)}: migrate the warehouse"]
    keys = KEYS[table]
    s, r = (_as_text(frame, columns, keys, recomputed.schema) for frame in (stored, recomputed))
    only_stored = s.join(r, on=columns, how="anti", nulls_equal=True)
    only_recomputed = r.join(s, on=columns, how="anti", nulls_equal=True)
    pairs = only_stored.join(only_recomputed, on=keys, how="full", nulls_equal=True, suffix="_new", coalesce=False)
    lines = []
    for row in pairs.iter_rows(named=True):
        if all(row[k] is None for k in keys):
            lines.append(f"{table}: recomputed row ({describe(table, _side(row, keys, '_new'))}) is not stored")
        elif all(row[f"{k}_new"] is None for k in keys):
            lines.append(f"{table}: stored row ({describe(table, row)}) is not in the recomputation")
        else:
            changed = [
                f"{c} stored {row[c]}, recomputed {row[c + '_new']}"
                for c in columns
                if c not in keys and row[c] != row[c + "_new"]
            ]
            lines.append(f"{table} row ({describe(table, row)}): {'; '.join(changed)}")
    if not lines and s.height != r.height:
        lines.append(f"{table}: {s.height} rows stored, {r.height} recomputed (duplicate rows)")
    return lines


def _side(row: dict, keys: list[str], suffix: str) -> dict:
    return {k: row[f"{k}{suffix}"] for k in keys}


def _typed(stored: pl.DataFrame, recomputed: pl.DataFrame) -> pl.DataFrame:
    return stored.select(pl.col(c).cast(t) for c, t in recomputed.schema.items() if c in stored.columns)


def _charge_month_problems(conn: duckdb.DuckDBPyConnection, config: Config, billing: date, charge: date) -> list[str]:
    lines = charge_lines(conn, config, charge)
    computed: dict[str, ChargeRows] = {
        "marts.fct_chargeback_jobs": job_rows(conn, config, charge, lines),
        "marts.fct_chargeback_focus": focus_rows(conn, config, charge, lines),
    }
    problems, whole = [], {}
    for table, rows in computed.items():
        if rows.billing_month != billing:
            return [
                f"charge month {charge:%Y-%m}: its rows would now be booked in {rows.billing_month:%Y-%m}, "
                f"not {billing:%Y-%m}: run {charge:%Y-%m} again"
            ]
        stored = read_frame(conn, f"SELECT * FROM {table} WHERE charge_month = ?", [charge])
        mine = pl.col("billing_month") == billing
        problems += row_differences(table, stored.filter(mine), rows.rows)
        whole[table] = pl.concat([_typed(stored.filter(~mine), rows.rows), rows.rows], how="vertical_relaxed")
    table = "marts.mart_chargeback_reconciliation"
    rec = reconciliation_rows(
        conn, config, charge, whole["marts.fct_chargeback_focus"], whole["marts.fct_chargeback_jobs"]
    )
    stored = read_frame(conn, f"SELECT * FROM {table} WHERE month = ?", [charge])
    return problems + row_differences(table, stored, rec)


def recompute_problems(conn: duckdb.DuckDBPyConnection, config: Config, billing: date) -> list[str]:
    """What differs between the stored marts of billing month ``billing`` and a recomputation, one
    line per row (at most SHOWN, then a count of the rest); empty when they agree to the cent."""
    problems = []
    for charge in sorted({*charge_months(conn, billing), billing}):
        problems += _charge_month_problems(conn, config, billing, charge)
    if len(problems) > SHOWN:
        problems = [*problems[:SHOWN], f"... and {len(problems) - SHOWN} more rows"]
    return problems
