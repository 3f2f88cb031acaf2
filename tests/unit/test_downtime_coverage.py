"""A landed day whose derived downtime partition is missing or older than its landing is named,
per table and cluster; a failed day, another cluster's day, and a current partition are not."""

from __future__ import annotations

from datetime import date, datetime

import polars as pl

from contracts.sources import DCGM, KUBE
from pipelines.downtime_coverage import missing_downtime_days
from pipelines.tables import DERIVED_DOWNTIME, STG_DCGM__GPU_DROPOUT, STG_KUBE__NODE_DOWNTIME

LANDED = datetime(2026, 10, 2, 6)


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
    dcgm = [table for table, source in DERIVED_DOWNTIME.items() if source == DCGM]
    assert STG_DCGM__GPU_DROPOUT in dcgm and DERIVED_DOWNTIME[STG_KUBE__NODE_DOWNTIME] == KUBE
    written = {(t, "c1", date(2026, 10, 1)): datetime(2026, 10, 2, 7) for t in dcgm}
    written |= {(t, "c1", date(2026, 10, 3)): datetime(2026, 10, 4) for t in dcgm}
    lines = missing_downtime_days(landings, ["c1"], lambda t, c, d: written.get((t, c, d)))
    expected = [f"{t.name} of cluster c1: 2026-10-02 (missing), 2026-10-03 (older than the landing)" for t in dcgm]
    assert lines == sorted([*expected, "staging.stg_kube__node_downtime of cluster c1: 2026-10-01 (missing)"])


def test_every_landed_day_with_a_current_partition_passes() -> None:
    landings = _landings(("c1", 1, DCGM, "ok", LANDED), ("c1", 2, DCGM, "gap", LANDED))
    assert missing_downtime_days(landings, ["c1"], lambda t, c, d: datetime(2026, 10, 3)) == []
