"""Idempotent partition writes: delete the partition, insert the frame, in one transaction.

A partition is a set of column values (e.g. ``{"cluster": "a", "day": date(2025, 1, 1)}``).
Writing the same frame twice leaves identical rows; a write never touches rows outside
its partition; a failed write leaves the table as it was. ``main.partition_writes`` keeps
the row count of each partition's last write.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

import duckdb
import polars as pl
import pyarrow as pa

from warehouse.migrate import rollback_quietly

Frame = pl.DataFrame | pa.Table
Statement = tuple[str, Sequence[object]]  # (sql with ? placeholders, params)

# Bookkeeping tables are written by this package only.
_PROTECTED = {("main", "schema_migrations"), ("main", "partition_writes")}


class UnknownTableError(LookupError):
    """The target table does not exist."""


class UnknownColumnError(LookupError):
    """A frame column or partition key is not a column of the target table."""


class PartitionMismatchError(ValueError):
    """The frame holds rows outside the partition(s) being replaced."""


@dataclass(frozen=True)
class _Table:
    schema: str
    name: str
    columns: tuple[str, ...]

    @property
    def ref(self) -> str:
        return f"{quote_ident(self.schema)}.{quote_ident(self.name)}"

    @property
    def label(self) -> str:
        return f"{self.schema}.{self.name}"


def quote_ident(name: str) -> str:
    """A double-quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def partition_key(partition: Mapping[str, object]) -> str:
    """The ``partition_writes`` key: ``k=v`` sorted by column, ``/``-joined, values url-quoted.

    ``{"day": date(2025, 3, 1), "cluster": "a"}`` -> ``"cluster=a/day=2025-03-01"``.
    """
    return "/".join(f"{k}={quote(str(partition[k]), safe=':')}" for k in sorted(partition))


def _resolve_table(conn: duckdb.DuckDBPyConnection, table: str) -> _Table:
    parts = table.split(".")
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"table must be 'schema.name', got {table!r}")
    if tuple(parts) in _PROTECTED:
        raise ValueError(f"{table} is warehouse bookkeeping, not a partitioned table")
    rows = conn.execute(
        "SELECT c.column_name FROM information_schema.columns c "
        "JOIN information_schema.tables t USING (table_catalog, table_schema, table_name) "
        "WHERE c.table_catalog = current_database() AND c.table_schema = ? "
        "AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position",
        parts,
    ).fetchall()
    if not rows:
        raise UnknownTableError(f"unknown table {table!r}")
    return _Table(parts[0], parts[1], tuple(row[0] for row in rows))


def to_arrow(frame: Frame) -> pa.Table:
    if isinstance(frame, pl.DataFrame):
        return frame.to_arrow()
    if isinstance(frame, pa.Table):
        return frame
    raise TypeError(f"frame must be a polars DataFrame or a pyarrow Table, got {type(frame)}")


def _prepare(conn: duckdb.DuckDBPyConnection, table: str, frame: Frame, keys: Sequence[str]) -> tuple[_Table, pa.Table]:
    """Resolve the table and check the frame's columns and the partition keys against it."""
    target = _resolve_table(conn, table)
    data = to_arrow(frame)
    columns = data.column_names
    if not keys:
        raise ValueError("a partition needs at least one key column")
    if len(set(keys)) != len(keys) or len(set(columns)) != len(columns):
        raise ValueError(f"duplicate names in partition keys {list(keys)} or frame {columns}")
    unknown = [c for c in columns if c not in target.columns]
    if unknown:
        raise UnknownColumnError(f"frame columns {unknown} are not columns of {target.label}")
    unknown_keys = [k for k in keys if k not in target.columns]
    if unknown_keys:
        raise UnknownColumnError(f"partition keys {unknown_keys} are not columns of {target.label}")
    absent = [k for k in keys if k not in columns]
    if absent:
        raise ValueError(f"frame lacks partition columns {absent} (needed to write {target.label})")
    return target, data


def _write(
    conn: duckdb.DuckDBPyConnection,
    target: _Table,
    data: pa.Table,
    keys: list[str],
    partitions: list[dict[str, object]],
    also: Sequence[Statement] = (),
) -> int:
    """DELETE each partition, INSERT the frame once, check and record, run ``also``; one transaction."""
    where = " AND ".join(f"{quote_ident(k)} = ?" for k in keys)
    columns = ", ".join(quote_ident(c) for c in data.column_names)
    view = f"_cardhours_frame_{uuid.uuid4().hex}"
    conn.register(view, data)
    try:
        conn.execute("BEGIN TRANSACTION")
        try:
            inserted = _delete_insert(conn, target, view, where, columns, keys, partitions)
            for sql, params in also:
                conn.execute(sql, list(params))
            conn.execute("COMMIT")
        except BaseException:
            rollback_quietly(conn)
            raise
    finally:
        conn.unregister(view)
    return inserted


def _delete_insert(
    conn: duckdb.DuckDBPyConnection,
    target: _Table,
    view: str,
    where: str,
    columns: str,
    keys: list[str],
    partitions: list[dict[str, object]],
) -> int:
    for partition in partitions:
        conn.execute(f"DELETE FROM {target.ref} WHERE {where}", list(partition.values()))
    row = conn.execute(f"INSERT INTO {target.ref} ({columns}) SELECT {columns} FROM {quote_ident(view)}").fetchone()
    inserted = int(row[0]) if row else 0
    # Count with the DELETE's own predicate, in the table's types: every inserted row
    # must be found in one of the partitions, or the write would leak outside them.
    counts = []
    for partition in partitions:
        found = conn.execute(f"SELECT count(*) FROM {target.ref} WHERE {where}", list(partition.values())).fetchone()
        counts.append(int(found[0]) if found else 0)
    if sum(counts) != inserted:
        seen = conn.execute(
            f"SELECT DISTINCT {', '.join(quote_ident(k) for k in keys)} FROM {quote_ident(view)} LIMIT 10"
        ).fetchall()
        raise PartitionMismatchError(
            f"{inserted - sum(counts)} of {inserted} frame rows fall outside "
            f"{[partition_key(p) for p in partitions][:10]} of {target.label}; "
            f"frame {keys} values include {seen}"
        )
    for partition, count in zip(partitions, counts, strict=True):
        conn.execute(
            "INSERT INTO main.partition_writes (table_name, partition_key, rows) VALUES (?, ?, ?) "
            "ON CONFLICT (table_name, partition_key) DO UPDATE SET rows = excluded.rows",
            [target.label, partition_key(partition), count],
        )
    return inserted


def replace_partition(
    conn: duckdb.DuckDBPyConnection,
    table: str,
    frame: Frame,
    partition: Mapping[str, object],
    also: Sequence[Statement] = (),
) -> int:
    """Replace the rows of ``table`` ("schema.name") matching ``partition`` with ``frame``.

    Frame columns are inserted by name; table columns missing from the frame become NULL.
    Every frame row must belong to the partition. ``also``: further statements (e.g. recording
    the landing, ``warehouse.landings``) run in the same transaction after the insert. One
    transaction; returns rows inserted.
    """
    keys = list(partition)
    target, data = _prepare(conn, table, frame, keys)
    if any(value is None for value in partition.values()):
        raise ValueError(f"partition values must be non-null: {dict(partition)}")
    return _write(conn, target, data, keys, [dict(partition)], also)


def replace_partitions_by(conn: duckdb.DuckDBPyConnection, table: str, frame: Frame, keys: Sequence[str]) -> int:
    """Replace every partition (distinct ``keys`` values) present in ``frame``, in one transaction.

    Partitions absent from the frame are left alone. Returns rows inserted.
    """
    keys = list(keys)
    target, data = _prepare(conn, table, frame, keys)
    combos = pl.DataFrame(data.select(keys)).unique().sort(keys)
    if combos.null_count().sum_horizontal().item() > 0:
        raise PartitionMismatchError(f"frame has null values in partition keys {keys}")
    if combos.is_empty():
        return 0
    return _write(conn, target, data, keys, combos.to_dicts())
