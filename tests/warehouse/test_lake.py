"""The lake's files: one per partition at its hive path, replaced atomically, typed views over them,
temporary files of killed writers ignored and cleaned."""

from __future__ import annotations

import os
import re
import socket
import time
from datetime import date, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest

from warehouse import PartitionMismatchError, UnknownColumnError, connect
from warehouse.lake import (
    STALE_SECONDS,
    LakeTable,
    attach,
    clean_stale,
    lake_columns,
    partition_file,
    partitions,
    write_partition,
)
from warehouse.landings import LANDINGS, Landing, read_landing, write_landing

QUEUES = LakeTable("raw.kube_queue_samples", ("cluster", "day"))
DAY = date(2026, 10, 1)


def queue_rows(n: int, day: date = DAY) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "cluster": ["c1"] * n,
            "day": [day] * n,
            "ts": [datetime(2026, 10, 1, 0, i) for i in range(n)],
            "queue": [f"q{i}" for i in range(n)],
            "value": [float(i) for i in range(n)],
        }
    )


@pytest.fixture
def mem() -> duckdb.DuckDBPyConnection:
    conn = duckdb.connect()
    yield conn
    conn.close()


def test_a_partition_is_one_file_at_its_hive_path_and_a_rerun_replaces_it(
    tmp_path: Path, mem: duckdb.DuckDBPyConnection
) -> None:
    assert write_partition(mem, tmp_path, QUEUES, queue_rows(3), {"cluster": "c1", "day": DAY}) == 3
    target = tmp_path / "raw" / "kube_queue_samples" / "cluster=c1" / "day=2026-10-01" / "part-0.parquet"
    assert partition_file(tmp_path, QUEUES, {"cluster": "c1", "day": DAY}) == target
    stored = pl.read_parquet(target)
    # The key columns live in the path; the file holds the rest, in the migrations' types (missing ones NULL).
    assert dict(stored.schema) == {
        "metric": pl.String,
        "queue": pl.String,
        "labels": pl.String,
        "ts": pl.Datetime("us"),
        "value": pl.Float64,
    }
    assert stored.get_column("metric").null_count() == 3
    write_partition(mem, tmp_path, QUEUES, queue_rows(1), {"cluster": "c1", "day": DAY})
    assert pl.read_parquet(target).height == 1
    assert sorted(p.name for p in target.parent.iterdir()) == ["part-0.parquet"]  # no temporary file left
    assert partitions(tmp_path, QUEUES) == [{"cluster": "c1", "day": "2026-10-01"}]


def test_a_frame_must_fit_the_table_and_the_partition(tmp_path: Path, mem: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(UnknownColumnError, match=r"frame columns \['colour'\] are not columns of raw.kube_queue"):
        write_partition(
            mem, tmp_path, QUEUES, queue_rows(1).with_columns(colour=pl.lit("x")), {"cluster": "c1", "day": DAY}
        )
    with pytest.raises(PartitionMismatchError, match=r"1 of 1 frame rows fall outside"):
        write_partition(mem, tmp_path, QUEUES, queue_rows(1, date(2026, 10, 2)), {"cluster": "c1", "day": DAY})
    with pytest.raises(ValueError, match=r"partitioned by \['cluster', 'day'\], not \['day'\]"):
        write_partition(mem, tmp_path, QUEUES, queue_rows(1), {"day": DAY})
    with pytest.raises(ValueError, match=r"partition value 'a/b' cannot name a directory"):
        write_partition(mem, tmp_path, QUEUES, queue_rows(0), {"cluster": "a/b", "day": DAY})
    assert not (tmp_path / "raw").exists() or partitions(tmp_path, QUEUES) == []


def test_views_are_typed_when_the_lake_is_empty_and_see_files_once_refreshed(tmp_path: Path) -> None:
    with connect(":memory:") as conn:
        attach(conn, tmp_path, [QUEUES, LANDINGS])
        types = conn.execute("DESCRIBE raw.kube_queue_samples").fetchall()
        assert [(row[0], row[1]) for row in types] == list(lake_columns(QUEUES.name))
        assert conn.execute("SELECT count(*) FROM raw.kube_queue_samples").fetchall() == [(0,)]
        write_partition(conn, tmp_path, QUEUES, queue_rows(2), {"cluster": "c1", "day": DAY})
        write_partition(
            conn, tmp_path, QUEUES, queue_rows(3, date(2026, 10, 2)), {"cluster": "c1", "day": date(2026, 10, 2)}
        )
        attach(conn, tmp_path, [QUEUES])
        counted = conn.execute("SELECT day, count(*) FROM raw.kube_queue_samples GROUP BY day ORDER BY day").fetchall()
        assert counted == [(DAY, 2), (date(2026, 10, 2), 3)]
        # Once a file exists the view reads the glob: a later partition is seen without a refresh.
        write_partition(
            conn, tmp_path, QUEUES, queue_rows(4, date(2026, 10, 3)), {"cluster": "c1", "day": date(2026, 10, 3)}
        )
        assert conn.execute("SELECT count(*) FROM raw.kube_queue_samples").fetchall() == [(9,)]


def test_a_landing_is_a_file_of_its_own_and_is_read_back(tmp_path: Path, mem: duckdb.DuckDBPyConnection) -> None:
    landing = Landing("c1", DAY, "dcgm", datetime(2026, 10, 2, 3), rows=10, quarantined=1, screened=100)
    write_landing(mem, tmp_path, landing)
    assert (
        tmp_path / "meta" / "landings" / "source=dcgm" / "cluster=c1" / "day=2026-10-01" / "part-0.parquet"
    ).is_file()
    assert read_landing(mem, tmp_path, "c1", DAY, "dcgm") == landing
    assert read_landing(mem, tmp_path, "c1", DAY, "sacct") is None


def test_temporary_files_of_killed_writers_are_ignored_and_cleaned(tmp_path: Path) -> None:
    with connect(":memory:") as conn:
        write_partition(conn, tmp_path, QUEUES, queue_rows(2), {"cluster": "c1", "day": DAY})
        folder = partition_file(tmp_path, QUEUES, {"cluster": "c1", "day": DAY}).parent
        host = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())
        dead = folder / f".part-0.parquet.{host}.999999999.abc123.tmp"  # no such pid
        other = folder / ".part-0.parquet.otherhost.42.abc123.tmp"  # another host's: may still be writing
        old = folder / ".part-0.parquet.otherhost.43.abc124.tmp"
        for path in (dead, other, old):
            path.write_bytes(b"half a parquet file")
        yesterday = time.time() - STALE_SECONDS - 60
        os.utime(old, (yesterday, yesterday))
        attach(conn, tmp_path, [QUEUES])
        assert conn.execute("SELECT count(*) FROM raw.kube_queue_samples").fetchall() == [(2,)]  # temp files unread
        assert sorted(p.name for p in clean_stale(folder)) == sorted([dead.name, old.name])
        assert other.exists()
        write_partition(conn, tmp_path, QUEUES, queue_rows(1), {"cluster": "c1", "day": DAY})
        assert sorted(p.name for p in folder.iterdir()) == [other.name, "part-0.parquet"]
