"""The one way to open the warehouse: ``connect(path)``.

The returned connection is also a context manager (``with connect(p) as conn:``
closes it on exit).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from warehouse.migrate import MigrationSource, migrate

MEMORY = ":memory:"


def connect(
    path: str | Path,
    read_only: bool = False,
    *,
    memory_limit: str | None = None,
    threads: int | None = None,
    migrations: MigrationSource | None = None,
) -> duckdb.DuckDBPyConnection:
    """Open the DuckDB file at ``path`` with ``TimeZone='UTC'``, migrated to the latest schema.

    Creates missing parent directories. ``read_only`` opens an existing file without
    migrating (a reader never changes the schema). ``memory_limit`` (e.g. ``"8GB"``) and
    ``threads`` are passed to DuckDB when given; otherwise DuckDB's defaults apply.
    ``migrations`` overrides the migrations directory (tests); default: the package's.
    """
    config: dict[str, str | int] = {}
    if memory_limit is not None:
        config["memory_limit"] = memory_limit
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        config["threads"] = threads
    database = str(path)
    if database != MEMORY and not read_only:
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    conn = duckdb.connect(database, read_only=read_only, config=config)
    try:
        conn.execute("SET TimeZone = 'UTC'")
        if not read_only:
            migrate(conn, migrations)
    except BaseException:
        conn.close()
        raise
    return conn


def first_row(conn: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> tuple | None:
    """The query's first row (None without rows), its result read to the end: DuckDB refuses
    other work on a connection while a result is only partly fetched."""
    rows = conn.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def read_frame(conn: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> pl.DataFrame:
    """Run a query with ``?`` parameters bound from ``params`` and return it as a polars frame."""
    relation = conn.sql(sql, params=params)
    if relation is None:
        raise ValueError(f"statement returned no result set: {sql.strip()[:80]!r}")
    return relation.pl()
