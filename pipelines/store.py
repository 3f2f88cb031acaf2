"""Where each table is read from and written to: the one place that decides.

Two places, chosen per table by its flags in pipelines/tables.py:

- **the lake** (``lake=True``: the day-partitioned raw tables, their rollups, the daily
  quarantine, and the landings of meta.landings): one Parquet file per partition, replaced
  atomically (warehouse/lake.py). A step whose tables are all in the lake (every daily asset)
  works on an in-memory DuckDB connection where each lake table's name is a view over its
  files: it never opens the DuckDB file, so day partitions and clusters run in parallel
  processes, on several hosts when the lake is a shared mount.
- **the DuckDB file** (the monthly staging, intermediate and mart tables): a step that reads or
  writes one opens it (under the warehouse lock, pipelines/resources.py), with the lake
  tables as views over the lake (``open_warehouse``), and replaces a partition with
  ``replace_partition`` (one transaction). A ``parquet`` table's partition is also copied to
  the lake as Parquet after its write, for BI tools.

SQL that names a table (``raw.dcgm_samples``, in the SQL transforms too) runs on the store's
connection, where every name of pipelines/tables.py resolves. A day's landing is written to
the lake after the day's rows (``also=``), so a landing never exists without its data.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import polars as pl
import pyarrow as pa

from config import Config
from pipelines.tables import Table, lake_tables
from warehouse import connect, read_frame, replace_partition
from warehouse.connection import MEMORY
from warehouse.lake import LakeTable, attach, partition_file, refresh, write_partition, write_relation
from warehouse.lake_parts import PartitionWriter, partition_writer
from warehouse.lake_upgrade import export_legacy
from warehouse.landings import LANDINGS, Landing, write_landing
from warehouse.partitions import Frame, quote_ident

if TYPE_CHECKING:
    from pipelines.resources import CardhoursResource

LAKE, DUCKDB = "parquet", "duckdb"


@dataclass(frozen=True)
class Span:
    """A half-open range [start, end) of a column's values (the days of a month)."""

    start: object
    end: object


def all_lake_tables() -> list[LakeTable]:
    """The lake tables in writing order: the registry's, then the landings (written last)."""
    return [*lake_tables(), LANDINGS]


def open_warehouse(config: Config, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """The DuckDB file, migrated, its lake tables views over the lake (rows still held in
    DuckDB tables of an older warehouse exported first: warehouse/lake_upgrade.py). Read-only:
    as it is, views as last refreshed."""
    conn = connect(config.warehouse.path, read_only=read_only)
    if read_only:
        return conn
    try:
        export_legacy(conn, config.warehouse.lake, all_lake_tables())
        attach(conn, config.warehouse.lake, all_lake_tables())
    except BaseException:
        conn.close()
        raise
    return conn


def open_lake(config: Config) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB where every lake table is a view over the lake (the DuckDB file is
    never opened); the other tables exist there, empty."""
    conn = connect(MEMORY)
    try:
        attach(conn, config.warehouse.lake, all_lake_tables())
    except BaseException:
        conn.close()
        raise
    return conn


class Store:
    """Reads and partition writes of the tables, on one open connection."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, lake: Path, database: str = MEMORY) -> None:
        self.conn, self.lake, self.database = conn, lake, database

    @classmethod
    @contextmanager
    def open(cls, cardhours: CardhoursResource, tables: Sequence[Table] = ()) -> Iterator[Store]:
        """The lake alone when every one of ``tables`` is a lake table, else the warehouse."""
        config = cardhours.config
        if tables and all(table.lake for table in tables):
            conn = open_lake(config)
            try:
                yield cls(conn, config.warehouse.lake)
            finally:
                conn.close()
            return
        with cardhours.warehouse() as conn:
            yield cls(conn, config.warehouse.lake, str(config.warehouse.path))

    @staticmethod
    def kind(table: Table) -> str:
        """The Dagster kind (the UI's storage badge) of where ``table`` is stored."""
        return LAKE if table.lake else DUCKDB

    def relation(self, table: Table) -> str:
        """What a query reads ``table`` from."""
        return table.name

    def read(
        self,
        table: Table,
        where: Mapping[str, object],
        *,
        columns: str = "*",
        predicate: str = "",
        params: Sequence[object] = (),
        order_by: str = "",
    ) -> pl.DataFrame:
        """``SELECT columns FROM table WHERE column = value (or in a Span) ... AND predicate
        ORDER BY order_by``; values and ``params`` (of ``predicate``) are bound, never formatted."""
        clauses, values = [], []
        for column, value in where.items():
            if isinstance(value, Span):
                clauses.append(f"{column} >= ? AND {column} < ?")
                values += [value.start, value.end]
            else:
                clauses.append(f"{column} = ?")
                values.append(value)
        if predicate:
            clauses.append(predicate)
            values += list(params)
        sql = f"SELECT {columns} FROM {self.relation(table)}"
        sql += f" WHERE {' AND '.join(clauses)}" if clauses else ""
        sql += f" ORDER BY {order_by}" if order_by else ""
        return read_frame(self.conn, sql, values)

    def sql(self, text: str, params: Sequence[object] | None = None) -> pl.DataFrame:
        """Any query naming tables of pipelines/tables.py, ``?`` parameters bound from ``params``."""
        return read_frame(self.conn, text, list(params) if params is not None else None)

    def arrow(self, text: str, params: Sequence[object]) -> pa.Table:
        """A query's rows as Arrow, never converted (written back as they are)."""
        return self.conn.sql(text, params=list(params)).to_arrow_table()

    def write(self, table: Table, frame: Frame, partition: Mapping[str, object], also: Sequence[Landing] = ()) -> int:
        """Replace ``partition`` of ``table`` with ``frame`` (idempotent), then record ``also``
        (the day's landings, after its rows); rows written."""
        if not table.lake and self.database == MEMORY:
            raise RuntimeError(f"{table.name} is stored in the DuckDB file, which this step did not open")
        if table.lake:
            rows = write_partition(self.conn, self.lake, table.lake_table, frame, partition)
            refresh(self.conn, self.lake, table.lake_table)
        else:
            rows = replace_partition(self.conn, table.name, frame, partition)
            if table.parquet:
                self._copy_to_lake(table, partition)
        for landing in also:
            self.land(landing)
        return rows

    @contextmanager
    def writer(self, table: Table, partition: Mapping[str, object]) -> Iterator[PartitionWriter]:
        """Replace ``partition`` of a lake ``table`` with the frames appended to the writer, one
        after the other (a day's shards), when the block ends (``warehouse.lake_parts.partition_writer``)."""
        if not table.lake:
            raise RuntimeError(f"{table.name} is stored in the DuckDB file: only lake tables are written in parts")
        with partition_writer(self.conn, self.lake, table.lake_table, partition) as out:
            yield out
        refresh(self.conn, self.lake, table.lake_table)

    def land(self, landing: Landing) -> None:
        """Record a day's landing (ok, rejected or failed) in the lake."""
        write_landing(self.conn, self.lake, landing)
        refresh(self.conn, self.lake, LANDINGS)

    def _copy_to_lake(self, table: Table, partition: Mapping[str, object]) -> None:
        """The partition just written, as ``<lake>/<schema>/<table>/<key>=<value>/part-0.parquet``."""
        place = LakeTable(table.name, tuple(partition))
        where = " AND ".join(f"{quote_ident(key)} = ?" for key in partition)
        exclude = ", ".join(quote_ident(key) for key in partition)
        relation = self.conn.sql(
            f"SELECT * EXCLUDE ({exclude}) FROM {table.name} WHERE {where}", params=list(partition.values())
        )
        write_relation(relation, partition_file(self.lake, place, partition))
