"""DuckDB warehouse: ``connect(path)``, numbered migrations, idempotent partition writes."""

from warehouse.connection import connect, read_frame
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
    "applied_migrations",
    "connect",
    "discover_migrations",
    "migrate",
    "partition_key",
    "read_frame",
    "replace_partition",
    "replace_partitions_by",
]
