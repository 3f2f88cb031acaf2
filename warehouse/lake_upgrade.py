"""Warehouses from before the lake: their day partitions move from DuckDB tables into the lake.

A warehouse written before the lake holds the day-partitioned tables (raw samples, sacct rows,
rollups, landings...) as DuckDB tables. The first time cardhours opens it for writing with a
lake (``open_warehouse``: the monthly job, ``cardhours run``, ``cardhours close``), each such
table's partitions are written to the lake, one file each, and the table is then dropped for a
view over the lake. A partition the lake already holds is never overwritten: it was landed
after the upgrade (a daily run writes only the lake) and is newer. The landings go last, so
the lake never holds a landing without its rows. An export that is interrupted leaves the
tables in place; the next open exports what is still missing and drops them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from warehouse.connection import first_row
from warehouse.lake import LakeTable, lake_columns, partition_file, path_value, write_relation
from warehouse.migrate import rollback_quietly
from warehouse.partitions import quote_ident


def legacy_tables(conn: duckdb.DuckDBPyConnection, tables: Sequence[LakeTable]) -> list[LakeTable]:
    """The lake tables that are still DuckDB tables with rows in this warehouse."""
    found = []
    for table in tables:
        row = first_row(
            conn,
            "SELECT table_type FROM information_schema.tables WHERE table_catalog = current_database() "
            "AND table_schema = ? AND table_name = ?",
            [table.schema, table.table],
        )
        if row is None or row[0] != "BASE TABLE":
            continue
        held = first_row(conn, f"SELECT count(*) FROM {_ref(table)}")
        if held and held[0]:
            found.append(table)
    return found


def export_legacy(conn: duckdb.DuckDBPyConnection, lake: Path, tables: Sequence[LakeTable]) -> dict[str, int]:
    """Write every partition of the legacy tables to the lake (those it lacks), then empty the
    tables (one transaction); partitions written per table. ``tables`` in writing order (the
    landings last)."""
    legacy = legacy_tables(conn, tables)
    written = {table.name: _export(conn, lake, table) for table in legacy}
    conn.execute("BEGIN TRANSACTION")
    try:
        for table in legacy:
            conn.execute(f"DELETE FROM {_ref(table)}")
        conn.execute("COMMIT")
    except BaseException:
        rollback_quietly(conn)
        raise
    return written


def _export(conn: duckdb.DuckDBPyConnection, lake: Path, table: LakeTable) -> int:
    keys = ", ".join(quote_ident(key) for key in table.keys)
    where = " AND ".join(f"{quote_ident(key)} = ?" for key in table.keys)
    values = ", ".join(
        f"CAST({quote_ident(c)} AS {kind}) AS {quote_ident(c)}"
        for c, kind in lake_columns(table.name)
        if c not in table.keys
    )
    written = 0
    for combo in conn.execute(f"SELECT DISTINCT {keys} FROM {_ref(table)} ORDER BY {keys}").fetchall():
        partition = dict(zip(table.keys, combo, strict=True))
        if any(value is None for value in combo):
            raise ValueError(f"{table.name} has rows with a null partition key {partition}: fix them before upgrading")
        target = partition_file(lake, table, {k: path_value(v) for k, v in partition.items()})
        if target.exists():
            continue
        write_relation(conn.sql(f"SELECT {values} FROM {_ref(table)} WHERE {where}", params=list(combo)), target)
        written += 1
    return written


def _ref(table: LakeTable) -> str:
    return f"{quote_ident(table.schema)}.{quote_ident(table.table)}"
