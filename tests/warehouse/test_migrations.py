"""connect() and the migration runner, on temp DuckDB files."""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

import duckdb
import pytest

from warehouse import (
    MigrationChecksumError,
    MigrationError,
    applied_migrations,
    connect,
    discover_migrations,
    migrate,
)


def columns(conn: duckdb.DuckDBPyConnection, schema: str, table: str) -> list[tuple[str, str]]:
    return conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
        [schema, table],
    ).fetchall()


def write(directory: Path, name: str, sql: str) -> Path:
    path = directory / name
    path.write_text(sql, encoding="utf-8")
    return path


def versions(conn: duckdb.DuckDBPyConnection) -> list[int]:
    return sorted(applied_migrations(conn))


def test_connect_creates_parent_dirs_and_applies_shipped_migrations(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "wh.duckdb"
    with connect(path) as conn:
        rows = conn.execute("SELECT schema_name FROM information_schema.schemata").fetchall()
        assert {"raw", "staging", "intermediate", "marts"} <= {row[0] for row in rows}
        shipped = resources.files("warehouse").joinpath("migrations", "0001_raw.sql").read_bytes()
        assert applied_migrations(conn)[1] == ("raw", hashlib.sha256(shipped).hexdigest())
        assert versions(conn) == [m.version for m in discover_migrations()]  # every shipped file
        assert conn.execute("SELECT current_setting('TimeZone')").fetchone() == ("UTC",)
    assert path.is_file()


def test_partition_writes_is_keyed_by_table_and_partition(conn: duckdb.DuckDBPyConnection) -> None:
    assert columns(conn, "main", "partition_writes") == [
        ("table_name", "VARCHAR"),
        ("partition_key", "VARCHAR"),
        ("rows", "BIGINT"),
    ]
    conn.execute("INSERT INTO main.partition_writes VALUES ('raw.x', 'day=1', 1)")
    with pytest.raises(duckdb.ConstraintException):
        conn.execute("INSERT INTO main.partition_writes VALUES ('raw.x', 'day=1', 2)")


def test_rerun_is_a_no_op(db_path: Path) -> None:
    with connect(db_path) as conn:
        first = conn.execute("SELECT * FROM main.schema_migrations").fetchall()
    with connect(db_path) as conn:
        assert migrate(conn) == []
        assert conn.execute("SELECT * FROM main.schema_migrations").fetchall() == first


def test_pending_migrations_apply_in_version_order(db_path: Path, migrations_dir: Path) -> None:
    # 0002 depends on 0001; written in reverse to show ordering is by number, not by listing.
    write(migrations_dir, "0002_rows.sql", "INSERT INTO main.t VALUES (2);")
    write(migrations_dir, "0001_table.sql", "CREATE TABLE main.t (v INTEGER);")
    with connect(db_path, migrations=migrations_dir) as conn:
        assert versions(conn) == [1, 2]
    write(migrations_dir, "0010_more.sql", "INSERT INTO main.t VALUES (10);")
    with connect(db_path, migrations=migrations_dir) as conn:
        assert migrate(conn, migrations_dir) == []  # connect already applied 0010
        assert versions(conn) == [1, 2, 10]
        assert conn.execute("SELECT v FROM main.t ORDER BY v").fetchall() == [(2,), (10,)]


def test_edited_applied_migration_is_refused(db_path: Path, migrations_dir: Path) -> None:
    path = write(migrations_dir, "0001_table.sql", "CREATE TABLE main.t (v INTEGER);")
    connect(db_path, migrations=migrations_dir).close()
    path.write_text("CREATE TABLE main.t (v BIGINT);", encoding="utf-8")
    write(migrations_dir, "0002_more.sql", "CREATE TABLE main.u (v INTEGER);")
    with pytest.raises(MigrationChecksumError, match="0001_table.sql changed after it was applied"):
        connect(db_path, migrations=migrations_dir)
    with connect(db_path, read_only=True) as conn:
        assert versions(conn) == [1]
        assert columns(conn, "main", "t") == [("v", "INTEGER")]


def test_line_ending_change_is_not_an_edit(db_path: Path, migrations_dir: Path) -> None:
    path = write(migrations_dir, "0001_table.sql", "CREATE TABLE main.t (\n  v INTEGER\n);\n")
    connect(db_path, migrations=migrations_dir).close()
    path.write_bytes(b"CREATE TABLE main.t (\r\n  v INTEGER\r\n);\r\n")
    with connect(db_path, migrations=migrations_dir) as conn:
        assert versions(conn) == [1]


def test_failing_migration_rolls_back_entirely(db_path: Path, migrations_dir: Path) -> None:
    write(migrations_dir, "0001_table.sql", "CREATE TABLE main.t (v INTEGER);")
    bad = write(
        migrations_dir,
        "0002_broken.sql",
        "CREATE TABLE main.u (v INTEGER);\nINSERT INTO main.t VALUES ('not a number');",
    )
    with pytest.raises(MigrationError, match="0002_broken.sql failed at statement 2"):
        connect(db_path, migrations=migrations_dir)
    with connect(db_path, read_only=True) as conn:
        assert versions(conn) == [1]
        assert columns(conn, "main", "u") == []
    bad.write_text("CREATE TABLE main.u (v INTEGER);", encoding="utf-8")
    with connect(db_path, migrations=migrations_dir) as conn:
        assert versions(conn) == [1, 2]


def test_applied_migration_missing_from_source_is_refused(db_path: Path, migrations_dir: Path) -> None:
    path = write(migrations_dir, "0001_table.sql", "CREATE TABLE main.t (v INTEGER);")
    connect(db_path, migrations=migrations_dir).close()
    path.unlink()
    write(migrations_dir, "0002_other.sql", "CREATE TABLE main.u (v INTEGER);")
    with pytest.raises(MigrationError, match="0001_table applied, but no such file"):
        connect(db_path, migrations=migrations_dir)


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"1_short.sql": "SELECT 1;"}, "not named NNNN_name.sql"),
        ({"0001-dash.sql": "SELECT 1;"}, "not named NNNN_name.sql"),
        ({"0001_a.sql": "SELECT 1;", "0001_b.sql": "SELECT 1;"}, "share version 0001"),
        ({"0001_empty.sql": "-- nothing here\n"}, "contains no SQL statement"),
        ({"0001_tx.sql": "BEGIN; CREATE TABLE main.t (v INTEGER); COMMIT;"}, "must not control"),
    ],
)
def test_malformed_migration_sets_are_rejected(
    db_path: Path, migrations_dir: Path, files: dict[str, str], message: str
) -> None:
    for name, sql in files.items():
        write(migrations_dir, name, sql)
    with pytest.raises(MigrationError, match=message):
        connect(db_path, migrations=migrations_dir)
    with connect(db_path, read_only=True) as conn:
        assert versions(conn) == []


def test_non_sql_files_are_ignored(migrations_dir: Path) -> None:
    write(migrations_dir, "README.md", "notes")
    write(migrations_dir, "0001_table.sql", "CREATE TABLE main.t (v INTEGER);")
    assert [m.filename for m in discover_migrations(migrations_dir)] == ["0001_table.sql"]


def test_read_only_connect_does_not_migrate(db_path: Path, migrations_dir: Path) -> None:
    write(migrations_dir, "0001_table.sql", "CREATE TABLE main.t (v INTEGER);")
    connect(db_path, migrations=migrations_dir).close()
    write(migrations_dir, "0002_more.sql", "CREATE TABLE main.u (v INTEGER);")
    with connect(db_path, read_only=True, migrations=migrations_dir) as conn:
        assert versions(conn) == [1]
        assert columns(conn, "main", "u") == []
        assert conn.execute("SELECT current_setting('TimeZone')").fetchone() == ("UTC",)
        with pytest.raises(duckdb.Error):
            conn.execute("CREATE TABLE main.w (v INTEGER)")


def test_read_only_connect_of_unmigrated_file_leaves_it_unmigrated(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    duckdb.connect(str(db_path)).close()
    with connect(db_path, read_only=True) as conn:
        assert applied_migrations(conn) == {}
        assert columns(conn, "raw", "dcgm_samples") == []


def test_memory_and_thread_settings_are_applied(db_path: Path) -> None:
    with connect(db_path, memory_limit="512MB", threads=2) as conn:
        settings = conn.execute("SELECT current_setting('threads'), current_setting('memory_limit')").fetchone()
    assert settings is not None
    assert settings[0] == 2
    assert settings[1] == "488.2 MiB"  # DuckDB reads MB as 10^6 bytes, prints MiB
    with pytest.raises(ValueError, match="threads"):
        connect(db_path, threads=0)


def test_connection_closes_as_a_context_manager(db_path: Path) -> None:
    with connect(db_path) as conn:
        conn.execute("SELECT 1")
    with pytest.raises(duckdb.ConnectionException):
        conn.execute("SELECT 1")


def test_migration_0015_counts_earlier_raw_partitions_as_landed_and_chargeback_months_as_built(tmp_path: Path) -> None:
    path, old = tmp_path / "old.duckdb", tmp_path / "upto14"
    old.mkdir()
    for migration in discover_migrations():
        if migration.version < 15:
            write(old, migration.filename, migration.sql)
    with connect(path, migrations=old) as before:
        before.execute(
            "INSERT INTO main.partition_writes VALUES ('raw.dcgm_samples', 'cluster=alpha/day=2026-10-01', 120), "
            "('raw.slurm_sacct', 'cluster=alpha/day=2026-10-01', 7), "
            "('raw.kube_series', 'cluster=k-8s/day=2026-10-02', 3), "
            "('raw.quarantine', 'cluster=alpha/partition_key=2026-10-01/source=dcgm', 2), "
            "('marts.mart_chargeback_reconciliation', 'month=2026-10-01', 1), "
            "('marts.fct_job_usage', 'month=2026-09-01', 9)"
        )
    with connect(path) as after:
        landings = after.execute(
            "SELECT cluster, day, source, landed_at, rows, status FROM meta.landings ORDER BY ALL"
        ).fetchall()
        builds = after.execute("SELECT month, started_at, status FROM meta.monthly_builds").fetchall()
    assert [(c, d.isoformat(), s, t, r, st) for c, d, s, t, r, st in landings] == [
        ("alpha", "2026-10-01", "dcgm", None, 120, "ok"),
        ("alpha", "2026-10-01", "sacct", None, 7, "ok"),
        ("k-8s", "2026-10-02", "kube", None, 3, "ok"),
    ]
    assert [(m.isoformat(), s, st) for m, s, st in builds] == [("2026-10-01", None, "finished")]
