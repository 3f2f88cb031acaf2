"""Whether the month's derived downtime partitions exist for every landed day.

A downtime table derived from a landed source (``DERIVED_DOWNTIME``: Kubernetes node conditions,
DCGM dropouts) has one partition per cluster and day, written by the daily job after the source
landed, with no rows on a day without downtime. A partition that is missing, or older than the
day's newest landing (the source was landed again and the derived step did not run), would read
as "no downtime" and bill the time as idle; the capacity split refuses it instead, naming the
days and what to run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime

import polars as pl

from pipelines.tables import DERIVED_DOWNTIME, Table
from warehouse.landings import LANDED


def _newest(landings: pl.DataFrame) -> pl.DataFrame:
    """Per cluster, source and day: the newest landing, when it landed ('ok' or a coverage gap)."""
    newest = landings.sort("landed_at").group_by("cluster", "source", "day").last()
    return newest.filter(pl.col("status").is_in(list(LANDED))).sort("cluster", "source", "day")


def missing_downtime_days(
    landings: pl.DataFrame,
    clusters: list[str],
    written: Callable[[Table, str, date], datetime | None],
) -> list[str]:
    """One line per table and cluster whose landed days lack a current partition. ``landings``:
    meta.landings rows of the month; ``written(table, cluster, day)``: when that partition was
    written (None: never)."""
    newest = _newest(landings.filter(pl.col("cluster").is_in(clusters)))
    problems = []
    for table, source in DERIVED_DOWNTIME.items():
        for cluster, day, landed_at in (
            newest.filter(pl.col("source") == source).select("cluster", "day", "landed_at").iter_rows()
        ):
            at = written(table, cluster, day)
            if at is None or at < landed_at:
                problems.append((table.name, cluster, day, "missing" if at is None else "older than the landing"))
    lines: dict[tuple[str, str], list[str]] = {}
    for name, cluster, day, why in problems:
        lines.setdefault((name, cluster), []).append(f"{day.isoformat()} ({why})")
    return [f"{name} of cluster {cluster}: {', '.join(days)}" for (name, cluster), days in sorted(lines.items())]
