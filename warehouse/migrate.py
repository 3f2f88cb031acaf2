"""Numbered SQL migrations: ``warehouse/migrations/NNNN_name.sql``, applied once, in order.

Each pending file runs in its own transaction together with its row in
``main.schema_migrations``; a failing file leaves the database as it was. An applied
file is immutable: if its checksum changes, :func:`migrate` refuses to run.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import duckdb

MIGRATION_FILE = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")

CREATE_SCHEMA_MIGRATIONS = """
CREATE TABLE IF NOT EXISTS main.schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       VARCHAR NOT NULL,
    checksum   VARCHAR NOT NULL,
    applied_at TIMESTAMP NOT NULL
)
"""

MigrationSource = Traversable | Path | str


class MigrationError(RuntimeError):
    """The migration files or the database's migration history are not usable."""


class MigrationChecksumError(MigrationError):
    """An already-applied migration file was edited after it was applied."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    filename: str
    sql: str
    checksum: str


def default_source() -> Traversable:
    """The migrations shipped as package data of ``warehouse``."""
    return resources.files("warehouse").joinpath("migrations")


def checksum(sql: str) -> str:
    """sha256 of the file text, with line endings normalized (a CRLF checkout is not an edit)."""
    normalized = sql.replace("\r\n", "\n").replace("\r", "\n")
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()


def discover_migrations(source: MigrationSource | None = None) -> list[Migration]:
    """Every ``NNNN_name.sql`` in ``source`` (default: the package's), sorted by version.

    Any other ``*.sql`` file, or two files with one version, is an error rather than
    being skipped silently.
    """
    root = default_source() if source is None else source
    if isinstance(root, str):
        root = Path(root)
    if not root.is_dir():
        raise MigrationError(f"migrations directory not found: {root}")
    found: dict[int, Migration] = {}
    for entry in root.iterdir():
        if not entry.is_file() or not entry.name.endswith(".sql"):
            continue
        match = MIGRATION_FILE.match(entry.name)
        if match is None:
            raise MigrationError(
                f"migration file {entry.name!r} is not named NNNN_name.sql (four digits, underscore, lowercase name)"
            )
        version = int(match["version"])
        if version in found:
            raise MigrationError(
                f"two migration files share version {version:04d}: {found[version].filename!r} and {entry.name!r}"
            )
        sql = entry.read_text(encoding="utf-8")
        found[version] = Migration(version, match["name"], entry.name, sql, checksum(sql))
    return [found[version] for version in sorted(found)]


def applied_migrations(conn: duckdb.DuckDBPyConnection) -> dict[int, tuple[str, str]]:
    """version -> (name, checksum) from ``main.schema_migrations`` ({} if it does not exist)."""
    exists = conn.execute(
        "SELECT count(*) FROM information_schema.tables "
        "WHERE table_catalog = current_database() AND table_schema = 'main' "
        "AND table_name = 'schema_migrations'"
    ).fetchone()
    if exists is None or exists[0] == 0:
        return {}
    rows = conn.execute("SELECT version, name, checksum FROM main.schema_migrations").fetchall()
    return {version: (name, digest) for version, name, digest in rows}


def _check_history(migrations: list[Migration], applied: dict[int, tuple[str, str]]) -> None:
    by_version = {m.version: m for m in migrations}
    for version, (name, digest) in sorted(applied.items()):
        migration = by_version.get(version)
        if migration is None:
            raise MigrationError(
                f"database has migration {version:04d}_{name} applied, but no such file "
                "exists; was it migrated by a newer release?"
            )
        if migration.checksum != digest:
            raise MigrationChecksumError(
                f"migration {migration.filename} changed after it was applied "
                f"(recorded sha256 {digest}, file sha256 {migration.checksum}); applied "
                "migrations are immutable: put the change in a new NNNN_name.sql file"
            )


def _statements(conn: duckdb.DuckDBPyConnection, migration: Migration) -> list[duckdb.Statement]:
    statements = conn.extract_statements(migration.sql)
    if not statements:
        raise MigrationError(f"migration {migration.filename} contains no SQL statement")
    for statement in statements:
        if statement.type == duckdb.StatementType.TRANSACTION:
            raise MigrationError(
                f"migration {migration.filename} must not control transactions "
                f"({statement.query.strip()!r}); each file already runs in one"
            )
    return statements


def _apply(conn: duckdb.DuckDBPyConnection, migration: Migration) -> bool:
    statements = _statements(conn, migration)
    conn.execute("BEGIN TRANSACTION")
    try:
        # Re-read inside the transaction: another connection may have applied it meanwhile.
        row = conn.execute(
            "SELECT checksum FROM main.schema_migrations WHERE version = ?", [migration.version]
        ).fetchone()
        if row is not None:
            _check_history([migration], {migration.version: (migration.name, row[0])})
            conn.execute("ROLLBACK")
            return False
        for index, statement in enumerate(statements, start=1):
            try:
                conn.execute(statement)
            except duckdb.Error as exc:
                raise MigrationError(f"migration {migration.filename} failed at statement {index}: {exc}") from exc
        conn.execute(
            "INSERT INTO main.schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
            [
                migration.version,
                migration.name,
                migration.checksum,
                datetime.now(UTC).replace(tzinfo=None),
            ],
        )
        conn.execute("COMMIT")
    except BaseException:
        rollback_quietly(conn)
        raise
    return True


def rollback_quietly(conn: duckdb.DuckDBPyConnection) -> None:
    # After a failed COMMIT DuckDB has already ended the transaction; the original
    # error is the one worth raising, not "no transaction is active".
    try:
        conn.execute("ROLLBACK")
    except duckdb.Error:
        pass


def migrate(conn: duckdb.DuckDBPyConnection, source: MigrationSource | None = None) -> list[int]:
    """Apply every pending migration from ``source`` in version order; return their versions.

    Idempotent: with nothing pending it changes nothing and returns ``[]``.
    """
    migrations = discover_migrations(source)
    conn.execute(CREATE_SCHEMA_MIGRATIONS)
    applied = applied_migrations(conn)
    _check_history(migrations, applied)
    done: list[int] = []
    for migration in migrations:
        if migration.version not in applied and _apply(conn, migration):
            done.append(migration.version)
    return done


def migration_applied_at(conn: duckdb.DuckDBPyConnection, version: int) -> datetime | None:
    """When migration ``version`` was applied to this warehouse (UTC, naive); None when it was not."""
    rows = conn.execute("SELECT applied_at FROM main.schema_migrations WHERE version = ?", [version]).fetchall()
    return rows[0][0] if rows else None
