"""A landed day whose derived downtime partition is missing or older than its landing is named,
per table and cluster; a failed day, another cluster's day, and a current partition are not. A
day landed before the table's migration was applied (an upgraded warehouse) is listed apart."""

from __future__ import annotations

from datetime import date, datetime

import polars as pl

from contracts.sources import DCGM, KUBE
from pipelines.downtime_coverage import downtime_coverage
from pipelines.tables import DERIVED_DOWNTIME, STG_DCGM__GPU_DROPOUT, STG_DCGM__GPU_XID, STG_KUBE__NODE_DOWNTIME
from warehouse.migrate import discover_migrations

LANDED = datetime(2026, 10, 2, 6)
ALWAYS = datetime(2026, 1, 1)  # every migration applied before any landing: a new warehouse


def _landings(*rows: tuple[str, int, str, str, datetime]) -> pl.DataFrame:
    keys = ("cluster", "day", "source", "status", "landed_at")
    return pl.DataFrame([dict(zip(keys, (c, date(2026, 10, d), s, st, at), strict=True)) for c, d, s, st, at in rows])


def test_missing_and_stale_partitions_are_named_by_table_cluster_and_day() -> None:
    landings = _landings(
        ("c1", 1, DCGM, "ok", LANDED),  # written after: current
        ("c1", 2, DCGM, "gap", LANDED),  # never written
        ("c1", 3, DCGM, "ok", LANDED),  # landed again after it was written
        ("c1", 3, DCGM, "ok", datetime(2026, 10, 5)),
        ("c1", 4, DCGM, "failed", LANDED),  # not landed: the gate's business
        ("c1", 1, KUBE, "ok", LANDED),  # kube partition missing
        ("c2", 1, DCGM, "ok", LANDED),  # not a configured cluster of this run
    )
    dcgm = [table for table, derived in DERIVED_DOWNTIME.items() if derived.source == DCGM]
    assert STG_DCGM__GPU_DROPOUT in dcgm and DERIVED_DOWNTIME[STG_KUBE__NODE_DOWNTIME].source == KUBE
    written = {(t, "c1", date(2026, 10, 1)): datetime(2026, 10, 2, 7) for t in dcgm}
    written |= {(t, "c1", date(2026, 10, 3)): datetime(2026, 10, 4) for t in dcgm}
    found = downtime_coverage(landings, ["c1"], lambda t, c, d: written.get((t, c, d)), lambda v: ALWAYS)
    expected = [f"{t.name} of cluster c1: 2026-10-02 (missing), 2026-10-03 (older than the landing)" for t in dcgm]
    assert found.missing == sorted([*expected, "staging.stg_kube__node_downtime of cluster c1: 2026-10-01 (missing)"])
    assert found.never_derived == []


def test_every_landed_day_with_a_current_partition_passes() -> None:
    landings = _landings(("c1", 1, DCGM, "ok", LANDED), ("c1", 2, DCGM, "gap", LANDED))
    found = downtime_coverage(landings, ["c1"], lambda t, c, d: datetime(2026, 10, 3), lambda v: ALWAYS)
    assert found.missing == [] and found.never_derived == []


def test_days_landed_before_the_table_existed_are_listed_apart_not_refused() -> None:
    # An upgrade applied the XID migration on Oct 3: days 1 and 2 landed before it, day 4 after.
    upgraded = datetime(2026, 10, 3)
    since = {derived.since_migration: ALWAYS for derived in DERIVED_DOWNTIME.values()}
    since[DERIVED_DOWNTIME[STG_DCGM__GPU_XID].since_migration] = upgraded
    landings = _landings(
        ("c1", 1, DCGM, "ok", LANDED),
        ("c1", 2, DCGM, "ok", LANDED),
        ("c1", 4, DCGM, "ok", datetime(2026, 10, 5)),
    )
    written = {(t, "c1", date(2026, 10, d)): datetime(2026, 10, 6) for t in DERIVED_DOWNTIME for d in (1, 2)}
    written = {key: at for key, at in written.items() if key[0] != STG_DCGM__GPU_XID}  # never derived
    found = downtime_coverage(landings, ["c1"], lambda t, c, d: written.get((t, c, d)), since.get)
    assert found.never_derived == [f"{STG_DCGM__GPU_XID.name} of cluster c1: 2026-10-01, 2026-10-02"]
    # day 4 landed after the upgrade: its missing partitions are refused, the XID one included
    assert f"{STG_DCGM__GPU_XID.name} of cluster c1: 2026-10-04 (missing)" in found.missing


def test_each_derived_table_names_the_migration_that_created_it() -> None:
    migrations = {migration.version: migration.sql for migration in discover_migrations()}
    for table, derived in DERIVED_DOWNTIME.items():
        assert f"CREATE TABLE {table.name} (" in migrations[derived.since_migration], table.name
