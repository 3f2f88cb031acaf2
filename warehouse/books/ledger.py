"""Closed billing months: the frozen, hash-chained chargeback ledger (docs/chargeback.md,
"Closed months").

``freeze_month`` copies a billing month's FOCUS rows (with its InvoiceId) and job lines into
``marts.chargeback_ledger`` / ``marts.chargeback_ledger_jobs`` and records the month in
``marts.chargeback_closed_months``, each row chained to the one before (warehouse/books/ledger_chain.py);
``cardhours close`` calls it inside its transaction once the month passed every condition
(warehouse/books/close.py). Nothing here changes a ledger row's content; there is no reopen. The
chargeback assets read ``closed_months`` to decide whether a month's rerun writes its regular rows
(open) or only corrections (closed), and ``next_open_month`` to know which billing month books
those corrections.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

import duckdb
import polars as pl

from transforms.marts.fct_chargeback_focus import ORDER as FOCUS_ORDER
from transforms.marts.fct_chargeback_jobs import ORDER as JOBS_ORDER
from warehouse import first_row, read_frame
from warehouse.books.ledger_chain import (
    FOCUS_TABLE,
    JOBS_TABLE,
    MONTHS_TABLE,
    SEQ,
    as_table,
    chain,
    chain_tip,
    table_schema,
)
from warehouse.partitions import quote_ident

CHECKS = ("capacity_balanced", "cost_balanced", "departments_balanced", "jobs_balanced")
# The invoice of a closed billing month, per billing account: "<BillingAccountId>-<YYYY-MM>"
# (docs/chargeback.md, "Invoices"), a SQL expression over the FOCUS row. Migration 0014 gave months
# closed before it the same ids (tests/warehouse/test_focus_migration.py checks they agree).
INVOICE_ID = """"BillingAccountId" || '-' || strftime("billing_month", '%Y-%m')"""
# What each ledger table freezes: the rows a close reads (fixed SQL, the month bound) and their order.
SOURCES = {
    FOCUS_TABLE: (f'SELECT * REPLACE ({INVOICE_ID} AS "InvoiceId") FROM marts.fct_chargeback_focus', FOCUS_ORDER),
    JOBS_TABLE: ("SELECT * FROM marts.fct_chargeback_jobs", JOBS_ORDER),
}


class CloseError(RuntimeError):
    """The month cannot be closed; the message says why and what to do."""


@dataclass(frozen=True)
class Closed:
    month: date
    closed_at: datetime
    focus_rows: int
    job_lines: int
    billed_cost: Decimal
    head_hash: str | None
    accepted_gaps: str | None
    already: bool  # True: it was closed before; nothing changed
    sealed: tuple[date, ...] = ()  # months closed before the hash chain, chained by this close
    coverage_gaps: tuple[str, ...] = ()  # the month's coverage gaps, listed (they do not block)


def closed_months(conn: duckdb.DuckDBPyConnection) -> dict[date, datetime]:
    rows = conn.execute("SELECT billing_month, closed_at FROM marts.chargeback_closed_months").fetchall()
    return {month: closed_at for month, closed_at in rows}


def closed_record(conn: duckdb.DuckDBPyConnection, month: date) -> Closed | None:
    """The closed month's record (``already=True``), or None when it is open."""
    row = first_row(
        conn,
        "SELECT closed_at, focus_rows, job_lines, billed_cost, head_hash, accepted_gaps "
        "FROM marts.chargeback_closed_months WHERE billing_month = ?",
        [month],
    )
    return Closed(month, row[0], int(row[1]), int(row[2]), row[3], row[4], row[5], already=True) if row else None


def next_month(month: date) -> date:
    return date(month.year + (month.month == 12), month.month % 12 + 1, 1)


def next_open_month(closed: dict[date, datetime] | set[date], month: date) -> date:
    """The first month after ``month`` that is not closed: where its corrections are booked."""
    candidate = next_month(month)
    while candidate in closed:
        candidate = next_month(candidate)
    return candidate


def booked(conn: duckdb.DuckDBPyConnection, table: str, charge_month: date) -> pl.DataFrame:
    """Ledger rows (without the close's own columns) of a charge month, from every closed billing month."""
    if table not in ("chargeback_ledger", "chargeback_ledger_jobs"):
        raise ValueError(f"not a ledger table: {table!r}")
    return read_frame(
        conn,
        f"SELECT * EXCLUDE (closed_at, ledger_seq, row_hash) FROM marts.{table} WHERE charge_month = ?",
        [charge_month],
    )


def ledger_rows(conn: duckdb.DuckDBPyConnection, month: date) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(FOCUS rows, job lines) the ledger holds for closed billing month ``month``."""
    focus = read_frame(conn, f"SELECT * FROM {FOCUS_TABLE} WHERE billing_month = ?", [month])
    return focus, read_frame(conn, f"SELECT * FROM {JOBS_TABLE} WHERE billing_month = ?", [month])


def charge_months(conn: duckdb.DuckDBPyConnection, billing: date) -> list[date]:
    """The charge months with FOCUS rows or job lines booked in billing month ``billing``."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT charge_month FROM marts.fct_chargeback_focus WHERE billing_month = ? UNION "
            "SELECT charge_month FROM marts.fct_chargeback_jobs WHERE billing_month = ? ORDER BY 1",
            [billing, billing],
        ).fetchall()
    ]


def reconciliation_problems(conn: duckdb.DuckDBPyConnection, month: date) -> list[str]:
    """Failed flags of the stored reconciliation of every charge month booked in ``month``."""
    problems = []
    for charge_month in charge_months(conn, month):
        rows = read_frame(conn, "SELECT * FROM marts.mart_chargeback_reconciliation WHERE month = ?", [charge_month])
        if rows.is_empty():
            problems.append(f"no reconciliation for charge month {charge_month:%Y-%m}")
        for row in rows.iter_rows(named=True):
            failed = [name for name in CHECKS if not row[name]]
            if failed:
                problems.append(
                    f"cluster {row['cluster']!r} charge month {charge_month:%Y-%m}: {', '.join(failed)} failed"
                )
    return problems


def _insert(conn: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    view = f"_cardhours_ledger_{uuid.uuid4().hex}"
    columns = ", ".join(quote_ident(c) for c in frame.columns)
    conn.register(view, frame.to_arrow())
    try:
        conn.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {quote_ident(view)}")
    finally:
        conn.unregister(view)


def freeze_month(
    conn: duckdb.DuckDBPyConnection, month: date, closed_at: datetime, accepted_gaps: str | None, gaps: list[str]
) -> Closed:
    """Append billing month ``month`` to the ledger and its chain (inside the caller's transaction)."""
    seq, previous = chain_tip(conn)
    frozen: dict[str, pl.DataFrame] = {}
    for table, (source, order) in SOURCES.items():
        rows = read_frame(conn, f"{source} WHERE billing_month = ?", [month]).sort(order, nulls_last=True)
        rows = as_table(
            rows.with_columns(pl.lit(closed_at, pl.Datetime("us")).alias("closed_at")), table_schema(conn, table)
        )
        frozen[table], previous = chain(rows, table, previous, seq + 1)
        seq += rows.height
    focus, jobs = frozen[FOCUS_TABLE], frozen[JOBS_TABLE]
    cost = focus.get_column("BilledCost").sum() if focus.height else Decimal("0.00")
    currency = focus.get_column("BillingCurrency").min() if focus.height else None
    record = as_table(
        pl.DataFrame(
            [
                {
                    "billing_month": month,
                    "closed_at": closed_at,
                    "focus_rows": focus.height,
                    "job_lines": jobs.height,
                    "billed_cost": Decimal(cost),
                    "currency": currency,
                    "accepted_gaps": accepted_gaps,
                    "gaps": "\n".join(gaps) if gaps else None,
                }
            ]
        ),
        table_schema(conn, MONTHS_TABLE),
    )
    record, head = chain(record, MONTHS_TABLE, previous, seq + 1)
    for table, rows in ((FOCUS_TABLE, focus), (JOBS_TABLE, jobs), (MONTHS_TABLE, record)):
        _insert(conn, table, rows)
    return Closed(month, closed_at, focus.height, jobs.height, Decimal(cost), head, accepted_gaps, already=False)


def seal_unchained(conn: duckdb.DuckDBPyConnection) -> list[date]:
    """Chain the months closed before the ledger was hash-chained (oldest first), inside the
    caller's transaction: their rows keep their content and gain ``ledger_seq`` and hashes."""
    months = [
        r[0]
        for r in conn.execute(
            "SELECT billing_month FROM marts.chargeback_closed_months WHERE ledger_seq IS NULL ORDER BY billing_month"
        ).fetchall()
    ]
    seq, previous = chain_tip(conn)
    for month in months:
        for table in (FOCUS_TABLE, JOBS_TABLE, MONTHS_TABLE):
            rows = read_frame(conn, f"SELECT rowid AS _rowid, * FROM {table} WHERE billing_month = ?", [month])
            order = SOURCES[table][1] if table in SOURCES else ["billing_month"]
            rows = rows.sort(order, nulls_last=True)
            body, previous = chain(as_table(rows, table_schema(conn, table)), table, previous, seq + 1)
            seq += rows.height
            _update_chain(conn, table, rows.get_column("_rowid"), body)
    return months


def _update_chain(conn: duckdb.DuckDBPyConnection, table: str, rowids: pl.Series, body: pl.DataFrame) -> None:
    hash_column = "head_hash" if table == MONTHS_TABLE else "row_hash"
    update = pl.DataFrame({"_rowid": rowids, SEQ: body.get_column(SEQ), "_hash": body.get_column(hash_column)})
    view = f"_cardhours_seal_{uuid.uuid4().hex}"
    conn.register(view, update.to_arrow())
    try:
        conn.execute(
            f"UPDATE {table} SET {SEQ} = v.{SEQ}, {hash_column} = v._hash FROM {quote_ident(view)} v "
            f"WHERE {table}.rowid = v._rowid"
        )
    finally:
        conn.unregister(view)
