"""A month of several tables replaced in PostgreSQL in one transaction.

Inside one transaction, under an advisory lock on the schema (two publications never
interleave): the schema, the bookkeeping table and each missing table are created; a table
already there is compared with the mart first (a changed column stops the publication before any
row moves); then, per table, the month's rows are deleted and the DuckDB rows of the month
copied in (``COPY ... FROM STDIN``, CSV, ordered by every column), and the bookkeeping row
(rows, time, digest of the copied rows) replaced. Readers see the old month until the commit and
the new one after it, never a part; a failure rolls everything back."""

from __future__ import annotations

import hashlib
import io
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import IO

import duckdb
import pyarrow.csv as pacsv
from psycopg2 import sql
from psycopg2.extensions import connection as Connection
from psycopg2.extensions import cursor as Cursor

from warehouse.partitions import quote_ident
from warehouse.publish.ddl import META_TABLE, PgTable, create_statements, differences
from warehouse.publish.postgres import PublishError

BATCH_ROWS = 50_000
_META_COLUMNS = (
    "table_name text NOT NULL, month date NOT NULL, rows bigint NOT NULL, "
    "published_at timestamp without time zone NOT NULL, source_digest text NOT NULL, PRIMARY KEY (table_name, month)"
)
_META_COMMENT = (
    "cardhours publications: per table and month, the rows copied, when (UTC) and the sha256 of the rows as "
    "copied (CSV ordered by every column): equal digests, equal rows"
)


@dataclass(frozen=True)
class Published:
    table: str  # schema.name in PostgreSQL
    rows: int
    replaced: int  # rows of the month that were there before
    digest: str


def publish_month(
    pg: Connection,
    duck: duckdb.DuckDBPyConnection,
    tables: Sequence[PgTable],
    month: date,
    now: datetime,
    progress: Callable[[str], None] | None = None,
) -> list[Published]:
    """Replace ``month`` of every one of ``tables`` (all in one schema) in one transaction."""
    schemas = {table.schema for table in tables}
    if len(schemas) != 1:
        raise ValueError(f"tables of one schema are published together, not {sorted(schemas)}")
    schema = schemas.pop()
    try:
        with pg.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"cardhours publish {schema}",))
            _ensure_schema(cur, schema)
            for table in tables:
                _ensure_table(cur, table)
            done = []
            for table in tables:
                done.append(_replace(cur, duck, table, month, now))
                if progress:
                    progress(f"{table.label}: {done[-1].rows} rows of {month:%Y-%m} (replaced {done[-1].replaced})")
        pg.commit()
    except BaseException:
        pg.rollback()
        raise
    return done


def _ensure_schema(cur: Cursor, schema: str) -> None:
    cur.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
    if cur.fetchone() is None:
        cur.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    meta = sql.SQL(".").join([sql.Identifier(schema), sql.Identifier(META_TABLE)])
    if not _existing_columns(cur, schema, META_TABLE):
        cur.execute(sql.SQL("CREATE TABLE {} ({})").format(meta, sql.SQL(_META_COLUMNS)))
        cur.execute(sql.SQL("COMMENT ON TABLE {} IS %s").format(meta), (_META_COMMENT,))


def _existing_columns(cur: Cursor, schema: str, name: str) -> list[tuple[str, str]]:
    cur.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
        "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        (schema, name),
    )
    return [(column, kind) for column, kind in cur.fetchall()]


def _ensure_table(cur: Cursor, table: PgTable) -> None:
    existing = _existing_columns(cur, table.schema, table.name)
    if not existing:
        for statement, params in create_statements(table):
            cur.execute(statement, params or None)
        return
    found = differences(table, existing)
    if found:
        raise PublishError(_mismatch(cur, table, found))


def _mismatch(cur: Cursor, table: PgTable, found: list[str]) -> str:
    meta = sql.SQL(".").join([sql.Identifier(table.schema), sql.Identifier(META_TABLE)])
    cur.execute(sql.SQL("SELECT month FROM {} WHERE table_name = %s ORDER BY month").format(meta), (table.name,))
    months = ", ".join(f"{row[0]:%Y-%m}" for row in cur.fetchall()) or "none recorded"
    return (
        f"PostgreSQL table {table.label} no longer matches {table.source}: {'; '.join(found)}. Nothing was "
        f"published. The mart changed since the table was created: drop it (DROP TABLE {table.label}; DELETE FROM "
        f"{table.schema}.{META_TABLE} WHERE table_name = '{table.name}') and publish its months again "
        f"(published before: {months}); dashboards reading the changed columns need the same change"
    )


def _replace(cur: Cursor, duck: duckdb.DuckDBPyConnection, table: PgTable, month: date, now: datetime) -> Published:
    with tempfile.TemporaryFile() as spool:
        rows, digest = _spool(duck, table, month, spool)
        spool.seek(0)
        cur.execute(sql.SQL("DELETE FROM {} WHERE {} = %s").format(table.ref, sql.Identifier(table.period)), (month,))
        replaced = cur.rowcount
        copy = sql.SQL("COPY {} ({}) FROM STDIN WITH (FORMAT csv)").format(table.ref, table.column_list)
        cur.copy_expert(copy.as_string(cur), spool)
        if cur.rowcount != rows:
            raise PublishError(f"{table.label}: PostgreSQL took {cur.rowcount} rows of {rows} sent; nothing published")
    meta = sql.SQL(".").join([sql.Identifier(table.schema), sql.Identifier(META_TABLE)])
    cur.execute(
        sql.SQL(
            "INSERT INTO {} (table_name, month, rows, published_at, source_digest) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (table_name, month) DO UPDATE SET rows = EXCLUDED.rows, "
            "published_at = EXCLUDED.published_at, source_digest = EXCLUDED.source_digest"
        ).format(meta),
        (table.name, month, rows, now, digest),
    )
    return Published(table.label, rows, replaced, digest)


def _spool(duck: duckdb.DuckDBPyConnection, table: PgTable, month: date, out: IO[bytes]) -> tuple[int, str]:
    """The month's rows of the DuckDB table as CSV (ordered by every column) into ``out``:
    (rows, sha256 of the CSV)."""
    # Identifiers come from the declared table (pipelines/tables.py via PgTable), quoted; the month is bound.
    columns = ", ".join(quote_ident(column.name) for column in table.columns)
    source = ".".join(quote_ident(part) for part in table.source.split("."))
    query = f"SELECT {columns} FROM {source} WHERE {quote_ident(table.period)} = ? ORDER BY ALL"
    reader = duck.sql(query, params=[month]).to_arrow_reader(BATCH_ROWS)
    digest, rows = hashlib.sha256(), 0
    options = pacsv.WriteOptions(include_header=False)
    for batch in reader:
        buffer = io.BytesIO()
        pacsv.write_csv(batch, buffer, options)
        digest.update(buffer.getvalue())
        out.write(buffer.getvalue())
        rows += batch.num_rows
    return rows, digest.hexdigest()
