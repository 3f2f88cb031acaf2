"""Whether the month's derived downtime partitions exist for every landed day.

A downtime table derived from a landed source (``DERIVED_DOWNTIME``: Kubernetes node conditions,
DCGM dropouts, XID errors) has one partition per cluster and day, written by the daily job after
the source landed, with no rows on a day without downtime. A partition that is missing, or older
than the day's newest landing (the source was landed again and the derived step did not run),
would read as "no downtime" and bill the time as idle; the capacity split refuses it instead,
naming the days and what to run.

A day landed before the table existed (its migration applied later: a warehouse upgraded from an
older cardhours) was never derived and cannot be refused for it, or no month from before the
upgrade could be built again. Those days are listed apart (``never_derived``): the caller warns
that their downtime from that source is not known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime

import polars as pl

from pipelines.tables import DERIVED_DOWNTIME, Table
from warehouse.landings import LANDED


@dataclass(frozen=True)
class DowntimeCoverage:
    """One line per table and cluster: ``missing``, landed days whose partition is missing or
    stale (refuse the month); ``never_derived``, days landed before the table existed (warn)."""

    missing: list[str]
    never_derived: list[str]


def _newest(landings: pl.DataFrame) -> pl.DataFrame:
    """Per cluster, source and day: the newest landing, when it landed ('ok' or a coverage gap)."""
    newest = landings.sort("landed_at").group_by("cluster", "source", "day").last()
    return newest.filter(pl.col("status").is_in(list(LANDED))).sort("cluster", "source", "day")


def downtime_coverage(
    landings: pl.DataFrame,
    clusters: list[str],
    written: Callable[[Table, str, date], datetime | None],
    introduced: Callable[[int], datetime | None],
) -> DowntimeCoverage:
    """``landings``: meta.landings rows of the month; ``written(table, cluster, day)``: when that
    partition was written (None: never); ``introduced(version)``: when the migration was applied
    (None: not recorded)."""
    newest = _newest(landings.filter(pl.col("cluster").is_in(clusters)))
    missing: dict[tuple[str, str], list[str]] = {}
    never: dict[tuple[str, str], list[str]] = {}
    for table, derived in DERIVED_DOWNTIME.items():
        since = introduced(derived.since_migration)
        rows = newest.filter(pl.col("source") == derived.source).select("cluster", "day", "landed_at").iter_rows()
        for cluster, day, landed_at in rows:
            at = written(table, cluster, day)
            if at is None and since is not None and landed_at < since:
                never.setdefault((table.name, cluster), []).append(day.isoformat())
            elif at is None or at < landed_at:
                why = "missing" if at is None else "older than the landing"
                missing.setdefault((table.name, cluster), []).append(f"{day.isoformat()} ({why})")
    return DowntimeCoverage(_lines(missing), _lines(never))


def _lines(found: dict[tuple[str, str], list[str]]) -> list[str]:
    return [f"{name} of cluster {cluster}: {', '.join(days)}" for (name, cluster), days in sorted(found.items())]
