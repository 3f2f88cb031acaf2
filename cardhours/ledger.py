"""Closed billing months: the frozen chargeback ledger (docs/chargeback.md, "Closed months").

``close_month`` copies a billing month's FOCUS rows (with its InvoiceId) and job lines into
``marts.chargeback_ledger`` / ``marts.chargeback_ledger_jobs`` and records the month in
``marts.chargeback_closed_months``, in one transaction. Nothing here updates or deletes a
ledger row; there is no reopen. The chargeback assets read ``closed_months`` to decide whether
a month's rerun writes its regular rows (open) or only corrections (closed), and
``next_open_month`` to know which billing month books those corrections.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

import duckdb
import polars as pl

from warehouse import read_frame
from warehouse.migrate import rollback_quietly

CHECKS = ("capacity_balanced", "cost_balanced", "departments_balanced", "jobs_balanced")
# The invoice of a closed billing month, per billing account: "<BillingAccountId>-<YYYY-MM>"
# (docs/chargeback.md, "Invoices"), a SQL expression over the FOCUS row. Migration 0014 gave months
# closed before it the same ids (tests/warehouse/test_focus_migration.py checks they agree).
INVOICE_ID = """"BillingAccountId" || '-' || strftime("billing_month", '%Y-%m')"""
FREEZE_FOCUS = ("INSERT INTO marts.chargeback_ledger SELECT * REPLACE (" + INVOICE_ID + ' AS "InvoiceId"), ? '
                "FROM marts.fct_chargeback_focus WHERE billing_month = ?")


class CloseError(RuntimeError):
    """The month cannot be closed; the message says why and what to do."""


@dataclass(frozen=True)
class Closed:
    month: date
    closed_at: datetime
    focus_rows: int
    job_lines: int
    billed_cost: Decimal
    already: bool  # True: it was closed before; nothing changed


def closed_months(conn: duckdb.DuckDBPyConnection) -> dict[date, datetime]:
    rows = conn.execute("SELECT billing_month, closed_at FROM marts.chargeback_closed_months").fetchall()
    return {month: closed_at for month, closed_at in rows}


def next_month(month: date) -> date:
    return date(month.year + (month.month == 12), month.month % 12 + 1, 1)


def next_open_month(closed: dict[date, datetime] | set[date], month: date) -> date:
    """The first month after ``month`` that is not closed: where its corrections are booked."""
    candidate = next_month(month)
    while candidate in closed:
        candidate = next_month(candidate)
    return candidate


def booked(conn: duckdb.DuckDBPyConnection, table: str, charge_month: date) -> pl.DataFrame:
    """Ledger rows (without ``closed_at``) of a charge month, from every closed billing month."""
    if table not in ("chargeback_ledger", "chargeback_ledger_jobs"):
        raise ValueError(f"not a ledger table: {table!r}")
    return read_frame(conn, f"SELECT * EXCLUDE (closed_at) FROM marts.{table} WHERE charge_month = ?", [charge_month])


def _reconciliation_problems(conn: duckdb.DuckDBPyConnection, month: date) -> list[str]:
    charge_months = [r[0] for r in conn.execute(
        "SELECT DISTINCT charge_month FROM marts.fct_chargeback_focus WHERE billing_month = ? ORDER BY 1", [month]
    ).fetchall()]
    problems = []
    for charge_month in charge_months:
        rows = read_frame(conn, "SELECT * FROM marts.mart_chargeback_reconciliation WHERE month = ?", [charge_month])
        if rows.is_empty():
            problems.append(f"no reconciliation for charge month {charge_month:%Y-%m}")
        for row in rows.iter_rows(named=True):
            failed = [name for name in CHECKS if not row[name]]
            if failed:
                problems.append(f"cluster {row['cluster']!r} charge month {charge_month:%Y-%m}: {', '.join(failed)} failed")
    return problems


def close_month(conn: duckdb.DuckDBPyConnection, month: date, closed_at: datetime) -> Closed:
    """Freeze billing month ``month`` (its first day). Closing a closed month changes nothing."""
    previous = closed_months(conn)
    if month in previous:
        row = conn.execute(
            "SELECT focus_rows, job_lines, billed_cost FROM marts.chargeback_closed_months WHERE billing_month = ?",
            [month],
        ).fetchone()
        return Closed(month, previous[month], int(row[0]), int(row[1]), row[2], already=True)
    regular = conn.execute(
        "SELECT count(*) FROM marts.fct_chargeback_focus WHERE billing_month = ? AND charge_month = ?", [month, month]
    ).fetchone()[0]
    if not regular:
        raise CloseError(f"no chargeback rows for {month:%Y-%m}: run the month first (cardhours run --month {month:%Y-%m})")
    problems = _reconciliation_problems(conn, month)
    if problems:
        raise CloseError(f"{month:%Y-%m} does not reconcile, not closed: " + "; ".join(problems))
    conn.execute("BEGIN TRANSACTION")
    try:
        focus = conn.execute(
            FREEZE_FOCUS,
            [closed_at, month],
        ).fetchone()[0]
        jobs = conn.execute(
            "INSERT INTO marts.chargeback_ledger_jobs SELECT *, ? FROM marts.fct_chargeback_jobs WHERE billing_month = ?",
            [closed_at, month],
        ).fetchone()[0]
        cost, currency = conn.execute(
            "SELECT coalesce(sum(BilledCost), 0), min(BillingCurrency) FROM marts.chargeback_ledger WHERE billing_month = ?",
            [month],
        ).fetchone()
        conn.execute(
            "INSERT INTO marts.chargeback_closed_months VALUES (?, ?, ?, ?, ?, ?)",
            [month, closed_at, focus, jobs, cost, currency],
        )
        conn.execute("COMMIT")
    except BaseException:
        rollback_quietly(conn)
        raise
    return Closed(month, closed_at, int(focus), int(jobs), Decimal(cost), already=False)
