"""DuckDB warehouse: ``connect(path)``, numbered migrations, idempotent partition writes, and the
one exclusive lock every run and close holds (``hold_warehouse``)."""

from warehouse.connection import connect, first_row, read_frame
from warehouse.lock import WarehouseBusy, hold_warehouse
from warehouse.migrate import (
    Migration,
    MigrationChecksumError,
    MigrationError,
    applied_migrations,
    discover_migrations,
    migrate,
)
from warehouse.partitions import (
    PartitionMismatchError,
    UnknownColumnError,
    UnknownTableError,
    partition_key,
    replace_partition,
    replace_partitions_by,
)

__all__ = [
    "Migration",
    "MigrationChecksumError",
    "MigrationError",
    "PartitionMismatchError",
    "UnknownColumnError",
    "UnknownTableError",
    "WarehouseBusy",
    "applied_migrations",
    "connect",
    "discover_migrations",
    "first_row",
    "hold_warehouse",
    "migrate",
    "partition_key",
    "read_frame",
    "replace_partition",
    "replace_partitions_by",
]
