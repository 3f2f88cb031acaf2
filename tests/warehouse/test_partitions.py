"""replace_partition / replace_partitions_by / read_frame on a migrated temp DuckDB."""

from __future__ import annotations

import time
from datetime import date

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from contracts.schemas import QUARANTINE_SCHEMA, RAW_SAMPLE_SCHEMA
from warehouse import (
    PartitionMismatchError,
    UnknownColumnError,
    UnknownTableError,
    partition_key,
    read_frame,
    replace_partition,
    replace_partitions_by,
)

SAMPLES = "raw.dcgm_samples"
DAY1 = date(2025, 3, 1)
DAY2 = date(2025, 3, 2)
ORDER = ["cluster", "day", "ts", "hostname", "gpu", "hpc_job"]


def table(conn: duckdb.DuckDBPyConnection, name: str = SAMPLES) -> pl.DataFrame:
    """The whole table in a stable order (the table name comes from this test module)."""
    return read_frame(conn, f"SELECT * FROM {name}").sort(pl.all())


def writes(conn: duckdb.DuckDBPyConnection) -> list[tuple[str, str, int]]:
    return conn.execute("SELECT * FROM main.partition_writes ORDER BY ALL").fetchall()


def test_rewrite_is_idempotent_and_leaves_other_partitions(conn, samples) -> None:
    day1, day2 = samples("a", DAY1, 500, seed=1), samples("a", DAY2, 300, seed=2)
    assert replace_partition(conn, SAMPLES, day1, {"cluster": "a", "day": DAY1}) == 500
    assert replace_partition(conn, SAMPLES, day2, {"cluster": "a", "day": DAY2}) == 300
    before = table(conn)
    assert replace_partition(conn, SAMPLES, day1, {"day": DAY1, "cluster": "a"}) == 500
    assert_frame_equal(table(conn), before)
    assert writes(conn) == [
        (SAMPLES, "cluster=a/day=2025-03-01", 500),
        (SAMPLES, "cluster=a/day=2025-03-02", 300),
    ]
    stored_day2 = read_frame(conn, f"SELECT * FROM {SAMPLES} WHERE day = ?", [DAY2])
    assert_frame_equal(stored_day2.sort(ORDER), day2.sort(ORDER))


def test_round_trip_keeps_the_raw_sample_schema(conn, samples) -> None:
    frame = samples("a", DAY1, 200)
    replace_partition(conn, SAMPLES, frame, {"cluster": "a", "day": DAY1})
    stored = read_frame(conn, f"SELECT * FROM {SAMPLES}")
    assert stored.schema == RAW_SAMPLE_SCHEMA
    assert_frame_equal(stored.sort(ORDER), frame.sort(ORDER))
    assert stored["gpu_i_id"].null_count() == 160  # MIG rows keep their instance id


def test_smaller_and_empty_rewrites_shrink_the_partition(conn, samples) -> None:
    partition = {"cluster": "a", "day": DAY1}
    replace_partition(conn, SAMPLES, samples("a", DAY1, 100), partition)
    assert replace_partition(conn, SAMPLES, samples("a", DAY1, 7), partition) == 7
    assert table(conn).height == 7
    assert replace_partition(conn, SAMPLES, pl.DataFrame(schema=RAW_SAMPLE_SCHEMA), partition) == 0
    assert table(conn).height == 0
    assert writes(conn) == [(SAMPLES, "cluster=a/day=2025-03-01", 0)]


def test_row_outside_the_partition_is_refused_and_nothing_changes(conn, samples) -> None:
    replace_partition(conn, SAMPLES, samples("a", DAY1, 50), {"cluster": "a", "day": DAY1})
    replace_partition(conn, SAMPLES, samples("b", DAY1, 40), {"cluster": "b", "day": DAY1})
    before, before_writes = table(conn), writes(conn)
    stray = pl.concat([samples("a", DAY1, 10, seed=5), samples("b", DAY1, 1, seed=6)])
    with pytest.raises(PartitionMismatchError, match="1 of 11 frame rows fall outside"):
        replace_partition(conn, SAMPLES, stray, {"cluster": "a", "day": DAY1})
    assert_frame_equal(table(conn), before)
    assert writes(conn) == before_writes


def test_failure_mid_insert_rolls_back_the_delete(conn, samples) -> None:
    replace_partition(conn, SAMPLES, samples("a", DAY1, 50), {"cluster": "a", "day": DAY1})
    before, before_writes = table(conn), writes(conn)
    bad = samples("a", DAY1, 10).with_columns(pl.lit("not-a-gpu").alias("gpu"))
    with pytest.raises(duckdb.ConversionException):
        replace_partition(conn, SAMPLES, bad, {"cluster": "a", "day": DAY1})
    assert_frame_equal(table(conn), before)
    assert writes(conn) == before_writes
    assert conn.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone() == (0,)


def test_unknown_table_and_bad_names(conn, samples) -> None:
    frame = samples("a", DAY1, 3)
    with pytest.raises(UnknownTableError, match="raw.nope"):
        replace_partition(conn, "raw.nope", frame, {"cluster": "a"})
    with pytest.raises(ValueError, match="schema.name"):
        replace_partition(conn, "dcgm_samples", frame, {"cluster": "a"})
    with pytest.raises(ValueError, match="bookkeeping"):
        replace_partition(conn, "main.partition_writes", frame, {"cluster": "a"})


def test_unknown_columns_are_named(conn, samples) -> None:
    frame = samples("a", DAY1, 3).with_columns(pl.lit(1).alias("temperature_c"))
    with pytest.raises(UnknownColumnError, match="temperature_c"):
        replace_partition(conn, SAMPLES, frame, {"cluster": "a", "day": DAY1})
    with pytest.raises(UnknownColumnError, match="region"):
        replace_partition(conn, SAMPLES, samples("a", DAY1, 3), {"region": "eu"})
    with pytest.raises(ValueError, match="lacks partition columns"):
        replace_partition(conn, SAMPLES, samples("a", DAY1, 3).drop("day"), {"day": DAY1})
    with pytest.raises(ValueError, match="must be non-null"):
        replace_partition(conn, SAMPLES, samples("a", DAY1, 3), {"cluster": "a", "day": None})
    assert table(conn).height == 0


def test_missing_columns_become_null_and_arrow_tables_work(conn) -> None:
    frame = pl.DataFrame({"cluster": ["c1"], "source": ["sacct"], "partition_key": ["2025-03-01"], "reason": ["x"]})
    partition = {"cluster": "c1", "source": "sacct", "partition_key": "2025-03-01"}
    assert replace_partition(conn, "raw.quarantine", frame.to_arrow(), partition) == 1
    stored = read_frame(conn, "SELECT * FROM raw.quarantine")
    assert stored.schema == QUARANTINE_SCHEMA
    assert stored.row(0) == ("c1", "sacct", "2025-03-01", None, "x", None, None)
    key = "cluster=c1/partition_key=2025-03-01/source=sacct"
    assert writes(conn) == [("raw.quarantine", key, 1)]


def test_caller_transaction_is_not_hijacked(conn, samples) -> None:
    conn.execute("BEGIN TRANSACTION")
    with pytest.raises(duckdb.TransactionException):
        replace_partition(conn, SAMPLES, samples("a", DAY1, 3), {"cluster": "a", "day": DAY1})
    conn.execute("COMMIT")  # still the caller's transaction to end


def test_replace_partitions_by_rewrites_only_partitions_in_the_frame(conn, samples) -> None:
    both = pl.concat([samples("a", DAY1, 30, seed=1), samples("b", DAY1, 20, seed=2)])
    assert replace_partitions_by(conn, SAMPLES, both, ["cluster", "day"]) == 50
    only_a = samples("a", DAY1, 5, seed=3)
    assert replace_partitions_by(conn, SAMPLES, only_a, ["cluster", "day"]) == 5
    stored = table(conn)
    assert_frame_equal(stored.filter(pl.col("cluster") == "a"), only_a.sort(pl.all()))
    old_b = both.filter(pl.col("cluster") == "b").sort(pl.all())
    assert_frame_equal(stored.filter(pl.col("cluster") == "b"), old_b)
    assert writes(conn) == [
        (SAMPLES, "cluster=a/day=2025-03-01", 5),
        (SAMPLES, "cluster=b/day=2025-03-01", 20),
    ]


def test_replace_partitions_by_is_one_transaction(conn, samples) -> None:
    both = pl.concat([samples("a", DAY1, 30, seed=1), samples("b", DAY1, 20, seed=2)])
    replace_partitions_by(conn, SAMPLES, both, ["cluster"])
    before, before_writes = table(conn), writes(conn)
    good_a = samples("a", DAY1, 4).with_columns(pl.col("gpu").cast(pl.String))
    bad_b = samples("b", DAY1, 4).with_columns(pl.lit("x").alias("gpu"))
    with pytest.raises(duckdb.ConversionException):
        replace_partitions_by(conn, SAMPLES, pl.concat([good_a, bad_b]), ["cluster"])
    assert_frame_equal(table(conn), before)
    assert writes(conn) == before_writes


def test_replace_partitions_by_refuses_null_keys(conn, samples) -> None:
    frame = samples("a", DAY1, 3).with_columns(pl.lit(None, pl.String).alias("cluster"))
    with pytest.raises(PartitionMismatchError, match="null values"):
        replace_partitions_by(conn, SAMPLES, frame, ["cluster", "day"])


def test_partition_key_is_order_independent_and_unambiguous() -> None:
    assert partition_key({"day": DAY1, "cluster": "a"}) == "cluster=a/day=2025-03-01"
    assert partition_key({"cluster": "a/b=c"}) == "cluster=a%2Fb%3Dc"


def test_read_frame_binds_parameters(conn) -> None:
    frame = read_frame(conn, "SELECT ?::DATE AS day, ?::VARCHAR AS s", [DAY1, "x'; DROP"])
    assert frame.to_dicts() == [{"day": DAY1, "s": "x'; DROP"}]


@pytest.mark.slow
def test_two_million_row_partition_replace(conn, samples, capsys) -> None:
    other = samples("b", DAY1, 1000, seed=9)
    replace_partition(conn, SAMPLES, other, {"cluster": "b", "day": DAY1})
    big = samples("a", DAY1, 2_000_000, seed=1)
    partition = {"cluster": "a", "day": DAY1}
    timings = []
    for _ in range(2):  # first write into an empty partition, then a full replace
        started = time.perf_counter()
        assert replace_partition(conn, SAMPLES, big, partition) == 2_000_000
        timings.append(time.perf_counter() - started)
    with capsys.disabled():
        print(f"\n2M-row replace_partition: first {timings[0]:.2f}s, replace {timings[1]:.2f}s")
    counts = conn.execute(
        f"SELECT cluster, count(*), sum(sm_active) FROM {SAMPLES} GROUP BY cluster ORDER BY cluster"
    ).fetchall()
    assert [(c, n) for c, n, _ in counts] == [("a", 2_000_000), ("b", 1000)]
    assert counts[0][2] == pytest.approx(big["sm_active"].sum())
    assert writes(conn) == [
        (SAMPLES, "cluster=a/day=2025-03-01", 2_000_000),
        (SAMPLES, "cluster=b/day=2025-03-01", 1000),
    ]
