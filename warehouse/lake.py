"""The lake: day-partitioned tables as Parquet files, one file per partition (docs/storage.md).

A lake table's partition is a file at ``<lake>/<schema>/<table>/<k1>=<v1>/<k2>=<v2>/part-0.parquet``,
the keys in the table's order (hive style: the key columns are in the path, not in the file).
``write_partition`` writes the file under a temporary name in the same directory (unique per
host and process) and renames it into place: a reader sees the old file or the new one, never
half of one, and a rerun replaces it. Temporary files of killed writers never match the
``*.parquet`` globs readers use, and are removed by the next write to their directory (those of
a dead process on this host at once, any host's after a day). No lock is taken: writers of
different partitions never touch the same file, and two writers of one partition both rename
complete files (the last one wins), so the lake may be a shared mount written from several hosts.
``warehouse.lake_parts.partition_writer`` writes a partition's file from several frames (a
day's shards) with the same atomicity.

Column types come from the warehouse migrations (``lake_columns``: the DDL of the tables, run in
memory), so every file of a table has the same types. ``attach`` makes each table's name a view
over its files on a DuckDB connection (typed, zero rows while no file exists yet).
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cache
from pathlib import Path

import duckdb
import pyarrow as pa

from warehouse.connection import first_row
from warehouse.partitions import Frame, PartitionMismatchError, UnknownColumnError, quote_ident, to_arrow

FILE = "part-0.parquet"
_TEMP = re.compile(r"^\.part-0\.parquet\.(?P<host>[^.]+)\.(?P<pid>\d+)\.[0-9a-f]+\.tmp$")
STALE_SECONDS = 24 * 3600
_VALUE = re.compile(r"^[A-Za-z0-9_.:+-]+$")


@dataclass(frozen=True)
class LakeTable:
    """A table stored in the lake: ``schema.name``, its partition key columns (path order), and
    optionally a DuckDB table of the same columns whose rows its view adds (``union``)."""

    name: str
    keys: tuple[str, ...]
    union: str = ""

    @property
    def schema(self) -> str:
        return self.name.split(".")[0]

    @property
    def table(self) -> str:
        return self.name.split(".")[1]


@cache
def lake_columns(name: str) -> tuple[tuple[str, str], ...]:
    """(column, DuckDB type) of ``schema.name`` as the migrations define it."""
    return _migrated_columns().get(name) or _unknown(name)


@cache
def _migrated_columns() -> dict[str, tuple[tuple[str, str], ...]]:
    from warehouse.connection import MEMORY, connect

    with connect(MEMORY) as conn:
        rows = conn.execute(
            "SELECT table_schema || '.' || table_name, column_name, data_type FROM information_schema.columns "
            "ORDER BY table_schema, table_name, ordinal_position"
        ).fetchall()
    columns: dict[str, list[tuple[str, str]]] = {}
    for name, column, kind in rows:
        columns.setdefault(name, []).append((column, kind))
    return {name: tuple(cols) for name, cols in columns.items()}


def _unknown(name: str) -> tuple[tuple[str, str], ...]:
    raise UnknownColumnError(f"no table {name} in the warehouse migrations: a lake table needs its DDL there")


def path_value(value: object) -> str:
    """A partition value as it appears in the path (a date as YYYY-MM-DD)."""
    text = value.isoformat() if isinstance(value, date) else str(value)
    if not _VALUE.match(text):
        raise ValueError(f"partition value {text!r} cannot name a directory (letters, digits, '_.:+-' only)")
    return text


def partition_dir(lake: Path, table: LakeTable, partition: Mapping[str, object]) -> Path:
    """The directory of one partition; ``partition`` must give exactly the table's keys."""
    if set(partition) != set(table.keys):
        raise ValueError(f"{table.name} is partitioned by {list(table.keys)}, not {sorted(partition)}")
    parts = [f"{key}={path_value(partition[key])}" for key in table.keys]
    return Path(lake, table.schema, table.table, *parts)


def partition_file(lake: Path, table: LakeTable, partition: Mapping[str, object]) -> Path:
    return partition_dir(lake, table, partition) / FILE


def written_at(lake: Path, table: LakeTable, partition: Mapping[str, object]) -> datetime | None:
    """When the partition's file was last written (UTC, naive), or None when it was never written."""
    try:
        return datetime.fromtimestamp(partition_file(lake, table, partition).stat().st_mtime, UTC).replace(tzinfo=None)
    except FileNotFoundError:
        return None


def derived_current(lake: Path, derived: LakeTable, source: LakeTable, partition: Mapping[str, object]) -> bool:
    """Whether ``derived``'s partition is current: written no earlier than ``source``'s (a rollup
    is written after what it rolls up; a source written again since makes it stale), or both absent."""
    target, origin = partition_file(lake, derived, partition), partition_file(lake, source, partition)
    try:
        written = origin.stat().st_mtime_ns
    except FileNotFoundError:
        return not target.exists()
    try:
        return target.stat().st_mtime_ns >= written
    except FileNotFoundError:
        return False


def table_glob(lake: Path, table: LakeTable) -> str:
    """The glob of every partition file of ``table``."""
    return str(Path(lake, table.schema, table.table, *["*"] * len(table.keys), FILE))


def partitions(lake: Path, table: LakeTable) -> list[dict[str, str]]:
    """Every landed partition of ``table`` (values as in the path), sorted."""
    found = []
    for path in sorted(Path(lake, table.schema, table.table).glob("/".join(["*"] * len(table.keys) + [FILE]))):
        found.append(dict(part.split("=", 1) for part in path.parent.parts[-len(table.keys) :]))
    return found


def write_partition(
    conn: duckdb.DuckDBPyConnection, lake: Path, table: LakeTable, frame: Frame, partition: Mapping[str, object]
) -> int:
    """Replace one partition's file with ``frame`` (atomically; columns cast to the table's types,
    missing ones NULL); rows written. Frame key columns, when present, must hold the partition's values."""
    target = partition_file(lake, table, partition)
    with typed_frame(conn, table, frame, partition) as (relation, rows):
        write_relation(relation, target)
    return rows


@contextmanager
def typed_frame(
    conn: duckdb.DuckDBPyConnection, table: LakeTable, frame: Frame, partition: Mapping[str, object]
) -> Iterator[tuple[duckdb.DuckDBPyRelation, int]]:
    """``frame`` as a relation of the table's columns (keys left out) in its types, missing
    ones NULL, once its key columns (when present) are checked to hold the partition's
    values; with its row count."""
    data = to_arrow(frame)
    columns = lake_columns(table.name)
    known = {column for column, _ in columns}
    unknown = [column for column in data.column_names if column not in known]
    if unknown:
        raise UnknownColumnError(f"frame columns {unknown} are not columns of {table.name}")
    view = f"_lake_frame_{uuid.uuid4().hex}"
    conn.register(view, data)
    try:
        _check_inside(conn, view, table, data, partition)
        select = ", ".join(
            f"CAST({quote_ident(c) if c in data.column_names else 'NULL'} AS {kind}) AS {quote_ident(c)}"
            for c, kind in columns
            if c not in table.keys
        )
        yield conn.sql(f"SELECT {select} FROM {quote_ident(view)}"), data.num_rows
    finally:
        conn.unregister(view)


def _check_inside(
    conn: duckdb.DuckDBPyConnection, view: str, table: LakeTable, data: pa.Table, partition: Mapping[str, object]
) -> None:
    present = [key for key in table.keys if key in data.column_names]
    if not present:
        return
    outside = " OR ".join(f"{quote_ident(key)} IS DISTINCT FROM ?" for key in present)
    row = first_row(conn, f"SELECT count(*) FROM {quote_ident(view)} WHERE {outside}", [partition[k] for k in present])
    if row and row[0]:
        raise PartitionMismatchError(
            f"{row[0]} of {data.num_rows} frame rows fall outside {dict(partition)} of {table.name}"
        )


def write_relation(relation: duckdb.DuckDBPyRelation, target: Path) -> None:
    """Write a query's rows as Parquet to ``target``: a temporary file beside it, then a rename."""
    with replacing(target) as temp:
        relation.write_parquet(str(temp), compression="zstd")


@contextmanager
def replacing(target: Path) -> Iterator[Path]:
    """A temporary path beside ``target`` to write; renamed over ``target`` (flushed to disk
    first) when the block ends, removed when it raises."""
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(target.parent)
    temp = target.with_name(f".{target.name}.{_host()}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        yield temp
        _fsync(temp)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _fsync(target.parent)


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def clean_stale(directory: Path, now: float | None = None) -> list[Path]:
    """Remove temporary files a killed writer left in ``directory``: a dead process's on this
    host, any host's older than STALE_SECONDS. Returns what was removed."""
    removed, now = [], time.time() if now is None else now
    for path in directory.glob(".*.tmp"):
        match = _TEMP.match(path.name)
        if match is None:
            continue
        try:
            old = now - path.stat().st_mtime > STALE_SECONDS
        except FileNotFoundError:
            continue
        if old or (match["host"] == _host() and not _alive(int(match["pid"]))):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sql_text(value: str) -> str:
    """A SQL string literal (for a path in a view's text: DDL takes no bound parameters)."""
    return "'" + value.replace("'", "''") + "'"


def view_select(lake: Path, table: LakeTable) -> str:
    """The SELECT of ``table``'s view: its columns in table order and types, over its files
    (zero rows, typed, while none exists)."""
    columns = lake_columns(table.name)
    select = ", ".join(f"CAST({quote_ident(c)} AS {kind}) AS {quote_ident(c)}" for c, kind in columns)
    pattern = table_glob(lake, table)
    also = f" UNION ALL BY NAME SELECT {select} FROM {table.union}" if table.union else ""
    if not any(Path(lake, table.schema, table.table).glob("/".join(["*"] * len(table.keys) + [FILE]))):
        nulls = ", ".join(f"CAST(NULL AS {kind}) AS {quote_ident(c)}" for c, kind in columns)
        return f"SELECT {nulls} WHERE false{also}"
    types = dict(columns)
    hive = ", ".join(f"{sql_text(key)}: {sql_text(types[key])}" for key in table.keys)
    return (
        f"SELECT {select} FROM read_parquet({sql_text(pattern)}, hive_partitioning = true, "
        f"hive_types = {{{hive}}}, union_by_name = true){also}"
    )


def attach(conn: duckdb.DuckDBPyConnection, lake: Path, tables: Sequence[LakeTable]) -> None:
    """Make each table's name a view over its lake files on ``conn`` (a table of that name,
    empty or already exported, is dropped first: see warehouse/lake_upgrade.py)."""
    for table in tables:
        refresh(conn, lake, table)


def refresh(conn: duckdb.DuckDBPyConnection, lake: Path, table: LakeTable) -> None:
    """(Re)create ``table``'s view: files that appeared since are seen by its next query. A view
    whose text would not change is left alone (its comment holds a digest of the text): creating
    one writes the catalog, about 25 ms a view, and every asset opens the warehouse."""
    select = view_select(lake, table)
    mark = "lake view " + hashlib.sha256(select.encode()).hexdigest()
    row = first_row(
        conn,
        "SELECT t.table_type, v.comment FROM information_schema.tables t LEFT JOIN duckdb_views() v "
        "ON v.database_name = t.table_catalog AND v.schema_name = t.table_schema AND v.view_name = t.table_name "
        "WHERE t.table_catalog = current_database() AND t.table_schema = ? AND t.table_name = ?",
        [table.schema, table.table],
    )
    if row is not None and row[0] == "VIEW" and row[1] == mark:
        return
    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_ident(table.schema)}")
    ref = f"{quote_ident(table.schema)}.{quote_ident(table.table)}"
    if row is not None and row[0] == "BASE TABLE":
        held = first_row(conn, f"SELECT count(*) FROM {ref}")
        if held and held[0]:
            raise RuntimeError(
                f"{table.name} still holds {held[0]} rows in the DuckDB file: export them to the lake first "
                "(warehouse.lake_upgrade.export_legacy) so no landed partition is lost"
            )
        conn.execute(f"DROP TABLE {ref}")
    conn.execute(f"CREATE OR REPLACE VIEW {ref} AS {select}")
    conn.execute(f"COMMENT ON VIEW {ref} IS {sql_text(mark)}")
