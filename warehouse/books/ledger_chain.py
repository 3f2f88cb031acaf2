"""The closed ledger's hash chain (docs/chargeback.md, "Tamper evidence").

One chain runs through the whole ledger in ``ledger_seq`` order (1, 2, ...). Each close appends
its month: the month's FOCUS rows (marts.chargeback_ledger, in export order), then its job
lines (marts.chargeback_ledger_jobs, in export order), then its record in
marts.chargeback_closed_months. Each of them stores

    hash = sha256_hex(previous hash + "\\n" + table + "\\n" + canonical(row))

(``row_hash`` on ledger rows, ``head_hash`` on the month record; the first previous hash is 64
zeros; ``table`` is e.g. ``marts.chargeback_ledger``). The month record's hash is the month's
head hash: it covers every row of the ledger up to and including that month.

``canonical(row)``: the row as a JSON object of column name -> value text, keys sorted, no
whitespace (``","`` and ``":"``), UTF-8 without escaping non-ASCII; every column except the hash
column itself (``ledger_seq`` and ``closed_at`` included); columns whose value is null left out
(so a column added later, null in older rows, leaves their hashes as they were). Value text:
decimals with exactly the column's scale (``12.40``, ``-3.000000``), timestamps
``YYYY-MM-DDTHH:MM:SS.ffffff``, dates ``YYYY-MM-DD``, integers in decimal, booleans
``true``/``false``, text as it is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

import duckdb
import polars as pl

from warehouse import first_row, read_frame

GENESIS = "0" * 64
SEQ = "ledger_seq"
FOCUS_TABLE, JOBS_TABLE, MONTHS_TABLE = (
    "marts.chargeback_ledger",
    "marts.chargeback_ledger_jobs",
    "marts.chargeback_closed_months",
)
HASH_COLUMN = {FOCUS_TABLE: "row_hash", JOBS_TABLE: "row_hash", MONTHS_TABLE: "head_hash"}


def _text(name: str, dtype: pl.DataType) -> pl.Expr:
    """The column's values as their canonical text (null stays null)."""
    column = pl.col(name)
    if isinstance(dtype, pl.Datetime):
        return column.dt.strftime("%Y-%m-%dT%H:%M:%S%.6f")
    if isinstance(dtype, (pl.Decimal, pl.Date, pl.Boolean, pl.String)) or dtype.is_integer():
        return column.cast(pl.String)  # decimals keep their scale: "12.40", "-3.000000"
    raise TypeError(f"no canonical text for column {name!r} of type {dtype}")


def canonical(frame: pl.DataFrame, table: str) -> list[str]:
    """Each row's canonical serialization (module docstring), without the table's hash column."""
    names = sorted(c for c in frame.columns if c != HASH_COLUMN[table])
    texts = frame.select(_text(name, frame.schema[name]) for name in names)
    return [
        json.dumps(
            {k: v for k, v in zip(names, row, strict=True) if v is not None}, separators=(",", ":"), ensure_ascii=False
        )
        for row in texts.iter_rows()
    ]


def link(previous: str, table: str, text: str) -> str:
    return hashlib.sha256(f"{previous}\n{table}\n{text}".encode()).hexdigest()


def table_schema(conn: duckdb.DuckDBPyConnection, table: str) -> pl.Schema:
    """The table's columns as polars types (how the ledger is read back to verify it)."""
    if table not in HASH_COLUMN:
        raise ValueError(f"not a ledger table: {table!r}")
    return read_frame(conn, f"SELECT * FROM {table} LIMIT 0").schema


def as_table(frame: pl.DataFrame, schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """``frame`` with exactly the table's columns, in order, in its types (absent ones null)."""
    return frame.select(
        (pl.col(name) if name in frame.columns else pl.lit(None)).cast(dtype).alias(name)
        for name, dtype in schema.items()
    )


def chain(frame: pl.DataFrame, table: str, previous: str, first_seq: int) -> tuple[pl.DataFrame, str]:
    """Number ``frame``'s rows from ``first_seq`` in their order and hash them after
    ``previous`` (``frame`` has the table's columns and types); returns (rows, last hash)."""
    numbered = frame.with_columns(pl.int_range(first_seq, first_seq + frame.height, dtype=pl.Int64).alias(SEQ))
    hashes = []
    for text in canonical(numbered, table):
        previous = link(previous, table, text)
        hashes.append(previous)
    return numbered.with_columns(pl.Series(HASH_COLUMN[table], hashes, pl.String)), previous


def chain_tip(conn: duckdb.DuckDBPyConnection) -> tuple[int, str]:
    """(ledger_seq, head hash) of the newest chained month; (0, GENESIS) for an empty chain."""
    row = first_row(
        conn,
        "SELECT ledger_seq, head_hash FROM marts.chargeback_closed_months WHERE ledger_seq IS NOT NULL "
        "ORDER BY ledger_seq DESC LIMIT 1",
    )
    return (int(row[0]), str(row[1])) if row else (0, GENESIS)
