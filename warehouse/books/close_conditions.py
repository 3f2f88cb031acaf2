"""What stands between a billing month and its close (docs/chargeback.md, "Closed months").

Gaps (``--accept-gaps "reason"`` closes anyway and stores the reason): the month has not ended
``close.grace_days`` ago; a configured cluster misses a landed day ('ok' or 'gap') of a source;
a billed cluster's sample coverage is below ``close.min_coverage``; a billed cluster's
quarantined share of a source over the month is above ``close.max_quarantine_share`` (a
metrics-only cluster has no rows in the books: ``Config.charged_clusters``).
Blockers (never waived: run the month again): no finished monthly build of a charge month in
the billing month, or data landed after its build (stale marts).
Coverage gaps (days a source answered with nothing, landed as 'gap') are listed, never a reason
of their own: a landed gap is a landed day, and its missing samples count through the sample
coverage (a gap of the cluster's GPU samples lowers it).
``now`` comes from the caller; nothing here reads the clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

import duckdb
import polars as pl

from config import Config
from warehouse.books.landings import coverage_gap_lines, coverage_gaps, expected_sources, landing_gaps
from warehouse.books.ledger import charge_months, next_month
from warehouse.landings import FINISHED, latest_build, month_landings


@dataclass(frozen=True)
class Conditions:
    gaps: list[str]  # waivable with --accept-gaps
    blockers: list[str]  # never waived
    coverage_gaps: list[str] = field(default_factory=list)  # listed only (warehouse/books/landings.py)


def _grace(config: Config, month: date, now: datetime) -> list[str]:
    grace = config.close.grace_days
    opens = datetime.combine(next_month(month), time()) + timedelta(days=grace)
    if now >= opens:
        return []
    return [
        f"{month:%Y-%m} may close from {opens:%Y-%m-%d %H:%M}Z (the month's end + close.grace_days = {grace} "
        f"for late accounting); it is {now:%Y-%m-%d %H:%M}Z"
    ]


def _coverage(conn: duckdb.DuckDBPyConnection, config: Config, month: date) -> list[str]:
    rows = conn.execute(
        "SELECT cluster, sample_coverage FROM marts.mart_cluster_monthly WHERE month = ? ORDER BY cluster", [month]
    ).fetchall()
    least, charged = config.close.min_coverage, set(config.charged_clusters)
    return [
        f"cluster {cluster!r}: sample coverage {coverage:.1%} below close.min_coverage {least:.1%} "
        f"(marts.mart_cluster_monthly)"
        for cluster, coverage in rows
        if coverage is not None and coverage < least and cluster in charged
    ]


def _quarantine(config: Config, landings: pl.DataFrame) -> list[str]:
    most, charged = config.close.max_quarantine_share, config.charged_clusters
    totals = (
        landings.filter(pl.col("cluster").is_in(charged))
        .group_by("cluster", "source")
        .agg(pl.col("quarantined").sum(), pl.col("screened").sum())
    )
    lines = []
    for r in totals.sort("cluster", "source").iter_rows(named=True):
        if r["screened"] and r["quarantined"] / r["screened"] > most:
            lines.append(
                f"cluster {r['cluster']!r} {r['source']}: {r['quarantined'] / r['screened']:.2%} quarantined "
                f"({r['quarantined']:,} of {r['screened']:,}) over close.max_quarantine_share {most:.2%}"
            )
    return lines


def _build(conn: duckdb.DuckDBPyConnection, charge: date) -> list[str]:
    build = latest_build(conn, charge)
    again = f"run the month again (cardhours run --month {charge:%Y-%m})"
    if build is None:
        return [f"no monthly build of {charge:%Y-%m} is recorded: {again}"]
    if build.status != FINISHED:
        return [
            f"the last monthly build of {charge:%Y-%m} (started {build.started_at:%Y-%m-%d %H:%M:%S}Z) did not "
            f"finish, so its marts may be half rewritten: {again}"
        ]
    landings = month_landings(conn, charge, next_month(charge)).filter(pl.col("landed_at").is_not_null())
    if build.landed_through is not None:
        landings = landings.filter(pl.col("landed_at") > build.landed_through)
    if landings.is_empty():
        return []
    last = landings.sort("landed_at").row(-1, named=True)
    built = (
        f"built over landings through {build.landed_through:%Y-%m-%d %H:%M:%S}Z"
        if build.landed_through
        else "built without a record of its landings"
    )
    return [
        f"the marts of {charge:%Y-%m} are stale: {landings.height} landing(s) came after its last build ({built}), "
        f"the latest cluster {last['cluster']!r} {last['source']} {last['day']} "
        f"at {last['landed_at']:%Y-%m-%d %H:%M:%S}Z: "
        f"{again}"
    ]


def month_conditions(conn: duckdb.DuckDBPyConnection, config: Config, month: date, now: datetime) -> Conditions:
    """The gaps and blockers of closing billing month ``month`` at ``now`` (naive UTC)."""
    landings = month_landings(conn, month, next_month(month))
    gaps = [
        *_grace(config, month, now),
        *[f"not landed: {line}" for line in landing_gaps(landings, expected_sources(config), month, next_month(month))],
        *_coverage(conn, config, month),
        *_quarantine(config, landings),
    ]
    blockers = [line for charge in sorted({*charge_months(conn, month), month}) for line in _build(conn, charge)]
    return Conditions(gaps, blockers, coverage_gap_lines(coverage_gaps(landings)))
