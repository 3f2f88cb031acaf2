"""A lake partition's file written from several frames, one after the other (a day's shards):
each appended as the file's next row groups as it comes, never all held at once, under a
temporary name renamed into place when the last is in (``warehouse.lake.replacing``): readers
see the old partition or the whole new one, as with ``write_partition``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from contracts.signals import SIGNALS
from warehouse.lake import LakeTable, lake_columns, partition_file, replacing, typed_frame
from warehouse.partitions import Frame, quote_ident, to_arrow

ROW_GROUP_ROWS = 122_880  # rows per row group (DuckDB's own row group size)
PARQUET_OPTIONS = {"compression": "zstd", "compression_level": 3}  # as DuckDB writes: zstd, level 3


class PartitionWriter:
    """Appends frames to one partition's file being written (``partition_writer``)."""

    def __init__(
        self, conn: duckdb.DuckDBPyConnection, table: LakeTable, partition: Mapping[str, object], out: pq.ParquetWriter
    ) -> None:
        self.conn, self.table, self.partition, self.out = conn, table, partition, out
        self.rows = 0

    def append(self, frame: Frame) -> int:
        """Write ``frame``'s rows (cast as ``write_partition`` casts them) as the file's next
        row groups, a row group's worth at a time (only that much is ever cast: casting the
        frame at once held a copy of it, 60-80 MB more for a day's minute rows of 250 GPUs);
        rows written."""
        data = to_arrow(frame)
        parts = [pa.Table.from_batches([batch]) for batch in data.to_batches(ROW_GROUP_ROWS)]
        for part in parts or [data]:  # an empty frame is still checked against the table
            with typed_frame(self.conn, self.table, part, self.partition) as (relation, rows):
                if rows:
                    self.out.write_table(relation.to_arrow_table(), row_group_size=ROW_GROUP_ROWS)
        self.rows += data.num_rows
        return data.num_rows


@contextmanager
def partition_writer(
    conn: duckdb.DuckDBPyConnection, lake: Path, table: LakeTable, partition: Mapping[str, object]
) -> Iterator[PartitionWriter]:
    """One partition's file written from several frames (a day's shards, each appended as it
    comes, never all held at once): under a temporary name, renamed over the partition's file
    when the block ends, removed when it raises. Readers see the old partition or the whole
    new one, as with ``write_partition``; no frame appended: an empty partition."""
    target = partition_file(lake, table, partition)
    schema = _arrow_schema(conn, table)
    encodings = _encodings(schema)
    dictionary = [name for name in schema.names if name not in encodings]
    with (
        replacing(target) as temp,
        pq.ParquetWriter(temp, schema, use_dictionary=dictionary, column_encoding=encodings, **PARQUET_OPTIONS) as out,
    ):
        yield PartitionWriter(conn, table, partition, out)


def _encodings(schema: pa.Schema) -> dict[str, str]:
    """Column encodings other than dictionaries: timestamps step regularly (delta), a counter's
    readings are unique per row (byte-stream-split lets zstd find their slowly changing high
    bytes): a day of samples is smaller than DuckDB writes it, in less CPU time."""
    counters = {signal.name for signal in SIGNALS if signal.kind == "counter"}
    encodings = {field.name: "DELTA_BINARY_PACKED" for field in schema if pa.types.is_timestamp(field.type)}
    return encodings | {
        field.name: "BYTE_STREAM_SPLIT"
        for field in schema
        if field.name in counters and pa.types.is_floating(field.type)
    }


def _arrow_schema(conn: duckdb.DuckDBPyConnection, table: LakeTable) -> pa.Schema:
    """The Arrow schema of ``table``'s files (its columns but the keys, as DuckDB hands them out)."""
    nulls = ", ".join(
        f"CAST(NULL AS {kind}) AS {quote_ident(c)}" for c, kind in lake_columns(table.name) if c not in table.keys
    )
    return conn.sql(f"SELECT {nulls} WHERE false").to_arrow_table().schema
