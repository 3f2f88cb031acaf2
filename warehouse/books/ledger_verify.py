"""``cardhours ledger verify``: recompute the ledger's hash chain (warehouse/books/ledger_chain.py) and
name the first row that differs.

Walks the closed months in chain order; per month its FOCUS rows and job lines by
``ledger_seq``, then its record. Finds: a changed row (its hash no longer matches its content
and the hash before it), a deleted row (a ``ledger_seq`` missing), an added or moved row (a
number out of place, no number, or a billing month that is not closed), and months closed
before the chain that no close has sealed yet. Dropping the newest months entirely leaves a
shorter but consistent chain: compare the head hash printed here with the one ``cardhours
close`` printed for that month.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import duckdb
import polars as pl

from warehouse import first_row, read_frame
from warehouse.books.ledger_chain import (
    FOCUS_TABLE,
    GENESIS,
    HASH_COLUMN,
    JOBS_TABLE,
    MONTHS_TABLE,
    SEQ,
    canonical,
    link,
)
from warehouse.books.row_labels import describe


@dataclass(frozen=True)
class Verified:
    months: int
    rows: int
    head_month: date | None
    head_hash: str | None
    problem: str | None  # the first problem found; None: the chain holds


class _Broken(Exception):
    pass


def _where(table: str, month: date, row: dict) -> str:
    what = "the month record" if table == MONTHS_TABLE else f"row ({describe(table, row)})"
    return f"{table}, billing month {month:%Y-%m}, {what}, ledger_seq {row.get(SEQ)}"


Item = tuple[str, dict, str]  # table, row, canonical text


def _items(conn: duckdb.DuckDBPyConnection, month: date) -> list[Item]:
    items: list[Item] = []
    for table in (FOCUS_TABLE, JOBS_TABLE):
        frame = read_frame(conn, f"SELECT * FROM {table} WHERE billing_month = ?", [month])
        items += list(zip([table] * frame.height, frame.iter_rows(named=True), canonical(frame, table), strict=True))
    if any(row[SEQ] is None for _, row, _ in items):
        table, row, _ = next(item for item in items if item[1][SEQ] is None)
        raise _Broken(f"{_where(table, month, row)}: the row has no place in the chain (added after the close?)")
    return sorted(items, key=lambda item: item[1][SEQ])


def _walk(month: date, items: list[Item], previous: str, expected: int, focus_rows: int) -> tuple[str, int]:
    first = expected
    for table, row, text in items:
        seq = row[SEQ]
        if seq > expected:
            lost = FOCUS_TABLE if expected - first < focus_rows else JOBS_TABLE
            raise _Broken(
                f"{lost}, billing month {month:%Y-%m}: the row at ledger_seq {expected} is missing "
                f"(deleted after the close?); expected ledger_seq {expected}, found {seq} next "
                f"({_where(table, month, row)})"
            )
        if seq < expected:
            raise _Broken(
                f"{_where(table, month, row)}: ledger_seq {seq} again or out of place (expected {expected}): "
                "a row was added or moved"
            )
        found = row[HASH_COLUMN[table]]
        wanted = link(previous, table, text)
        if found != wanted:
            raise _Broken(
                f"{_where(table, month, row)}: expected hash {wanted} (from its content now), found {found} "
                "(recorded at the close): the row was changed after the close (or the row before it was)"
            )
        previous, expected = found, seq + 1
    return previous, expected


def _stray(conn: duckdb.DuckDBPyConnection) -> None:
    for table in (FOCUS_TABLE, JOBS_TABLE):
        row = first_row(
            conn,
            f"SELECT billing_month, count(*) FROM {table} WHERE billing_month NOT IN "
            "(SELECT billing_month FROM marts.chargeback_closed_months) GROUP BY 1 ORDER BY 1 LIMIT 1",
        )
        if row:
            raise _Broken(f"{table}: {row[1]} row(s) of billing month {row[0]:%Y-%m}, which is not closed")


def verify_ledger(conn: duckdb.DuckDBPyConnection) -> Verified:
    """Check the whole chain; ``problem`` names the first row that differs."""
    months = read_frame(conn, f"SELECT * FROM {MONTHS_TABLE} ORDER BY {SEQ} NULLS FIRST, billing_month")
    previous, expected, rows, head_month = GENESIS, 1, 0, None
    try:
        unsealed = months.filter(pl.col(SEQ).is_null())
        if unsealed.height:
            listed = ", ".join(f"{m:%Y-%m}" for m in unsealed.get_column("billing_month"))
            raise _Broken(
                f"billing month(s) {listed} were closed before the ledger was hash-chained and are not "
                "sealed yet: the next cardhours close seals them"
            )
        for record, text in zip(months.iter_rows(named=True), canonical(months, MONTHS_TABLE), strict=True):
            month = record["billing_month"]
            items = _items(conn, month)
            previous, expected = _walk(
                month, [*items, (MONTHS_TABLE, record, text)], previous, expected, record["focus_rows"]
            )
            rows, head_month = rows + len(items), month
        _stray(conn)
    except _Broken as broken:
        return Verified(months.height, rows, head_month, previous if head_month else None, str(broken))
    return Verified(months.height, rows, head_month, previous if head_month else None, None)
