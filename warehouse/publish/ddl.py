"""A published table's PostgreSQL shape, derived from the DuckDB table it copies: the same
columns in the same order, types from ``pg_types``, comments from docs/marts.md; the statements
that create it, and what differs from a table already in PostgreSQL."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
from psycopg2 import sql

from warehouse.publish.descriptions import column_descriptions
from warehouse.publish.pg_types import postgres_type

META_TABLE = "cardhours_publications"  # in the target schema: one row per table and month published


@dataclass(frozen=True)
class PgColumn:
    name: str
    pg_type: str
    comment: str | None = None


@dataclass(frozen=True)
class PgTable:
    """A DuckDB table (``source``, ``schema.name``) as published into ``schema``."""

    source: str
    schema: str
    columns: tuple[PgColumn, ...]
    period: str  # the month column whose value is a published partition

    @property
    def name(self) -> str:
        return self.source.split(".", 1)[1]

    @property
    def label(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def ref(self) -> sql.Composed:
        return sql.SQL(".").join([sql.Identifier(self.schema), sql.Identifier(self.name)])

    @property
    def column_list(self) -> sql.Composed:
        return sql.SQL(", ").join(sql.Identifier(column.name) for column in self.columns)


def duckdb_columns(conn: duckdb.DuckDBPyConnection, source: str) -> list[tuple[str, str]]:
    """(column, DuckDB type) of ``source`` (``schema.name``) in table order."""
    schema, name = source.split(".", 1)
    rows = conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
        [schema, name],
    ).fetchall()
    if not rows:
        raise LookupError(f"no table {source} in the warehouse: run a month first (cardhours run)")
    return [(column, kind) for column, kind in rows]


def pg_table(source: str, period: str, columns: list[tuple[str, str]], schema: str) -> PgTable:
    """The PostgreSQL shape of ``source`` whose DuckDB ``columns`` are given."""
    names = [column for column, _ in columns]
    if period not in names:
        raise ValueError(f"{source} has no column {period}: it cannot be published by month")
    comments = column_descriptions(source)
    return PgTable(
        source,
        schema,
        tuple(PgColumn(c, postgres_type(t, f"{source}.{c}"), comments.get(c)) for c, t in columns),
        period,
    )


def create_statements(table: PgTable) -> list[tuple[sql.Composable, tuple]]:
    """CREATE TABLE (with an index on the month column) and its comments, as (statement, params)."""
    columns = sql.SQL(", ").join(
        sql.SQL("{} {}").format(sql.Identifier(c.name), sql.SQL(c.pg_type)) for c in table.columns
    )
    index = sql.Identifier(f"{table.name}_{table.period}_idx")
    statements: list[tuple[sql.Composable, tuple]] = [
        (sql.SQL("CREATE TABLE {} ({})").format(table.ref, columns), ()),
        (sql.SQL("CREATE INDEX {} ON {} ({})").format(index, table.ref, sql.Identifier(table.period)), ()),
        (
            sql.SQL("COMMENT ON TABLE {} IS %s").format(table.ref),
            (f"cardhours {table.source}, one month per {table.period}: replaced whole by cardhours publish",),
        ),
    ]
    for column in table.columns:
        if column.comment:
            target = sql.SQL("{}.{}").format(table.ref, sql.Identifier(column.name))
            statements.append((sql.SQL("COMMENT ON COLUMN {} IS %s").format(target), (column.comment,)))
    return statements


def differences(table: PgTable, existing: list[tuple[str, str]]) -> list[str]:
    """What differs between ``table`` and the (column, type) list of the table in PostgreSQL."""
    have, want = dict(existing), {c.name: c.pg_type for c in table.columns}
    found = [f"column {name} ({kind}) is new in the mart" for name, kind in want.items() if name not in have]
    found += [f"column {name} ({kind}) is no longer in the mart" for name, kind in have.items() if name not in want]
    found += [
        f"column {name} is {have[name]} in PostgreSQL but {kind} in the mart"
        for name, kind in want.items()
        if name in have and have[name] != kind
    ]
    return found
