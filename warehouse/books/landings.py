"""Which days of a month have landed: the expected landings of a config, the missing days, and
the coverage gaps.

A month is complete when every configured cluster has a landed day (meta.landings: 'ok', or a
'gap' where the source answered with nothing) of every UTC day for each of its sources
(``ClusterConfig.sources``). The monthly job's gate (pipelines/assets/gate.py), ``cardhours
close`` (warehouse/books/close_conditions.py) and the monthly review sensor
(pipelines/review_sensor.py) all ask ``landing_gaps``; the review, the CLI summary and close
list the month's ``coverage_gaps``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

import polars as pl

from config import Config
from contracts.sources import DCGM, GAP_CAUSES, KUBE, SACCT
from warehouse.landings import GAP, LANDED

__all__ = [
    "DCGM",
    "GAP_SCHEMA",
    "KUBE",
    "SACCT",
    "Stale",
    "coverage_gap_lines",
    "coverage_gaps",
    "expected_sources",
    "landed_days",
    "landing_gaps",
    "stale_sources",
]

GAP_SCHEMA = {
    "cluster": pl.String,
    "source": pl.String,
    "first_day": pl.Date,
    "last_day": pl.Date,
    "days": pl.Int64,
    "cause": pl.String,
}


def expected_sources(config: Config) -> dict[str, list[str]]:
    """cluster -> the sources that land a day for it (``ClusterConfig.sources``)."""
    return config.expected_sources()


def _runs(days: list[tuple[date, str]]) -> list[tuple[date, date, str]]:
    """Consecutive days with the same problem text merged into (first, last, text)."""
    runs: list[tuple[date, date, str]] = []
    for day, text in days:
        if runs and runs[-1][2] == text and runs[-1][1] + timedelta(days=1) == day:
            runs[-1] = (runs[-1][0], day, text)
        else:
            runs.append((day, day, text))
    return runs


def _span(first: date, last: date) -> str:
    if first == last:
        return first.isoformat()
    return f"{first.isoformat()}..{last.isoformat()} ({(last - first).days + 1} days)"


def landing_gaps(
    landings: pl.DataFrame, expected: dict[str, list[str]], first: date, end: date, details: bool = True
) -> list[str]:
    """One line per cluster and source with days in [first, end) not landed ('ok' or 'gap'), e.g.
    ``cluster 'c1' dcgm: 2026-10-03 failed (ReadError: ...); 2026-10-20..2026-10-31 (12 days) missing``
    (``details=False``: a failed or rejected day's status without its error, so runs of such days merge)."""
    found = {(r["cluster"], r["source"], r["day"]): r for r in landings.iter_rows(named=True)}
    days = [first + timedelta(days=i) for i in range((end - first).days)]
    lines = []
    for cluster, sources in expected.items():
        for source in sources:
            problems = []
            for day in days:
                row = found.get((cluster, source, day))
                if row is None:
                    problems.append((day, "missing"))
                elif row["status"] not in LANDED:
                    detailed = details and row["detail"]
                    problems.append((day, f"{row['status']} ({row['detail']})" if detailed else row["status"]))
            if problems:
                text = "; ".join(f"{_span(a, b)} {why}" for a, b, why in _runs(problems))
                lines.append(f"cluster {cluster!r} {source}: {text}")
    return lines


def landed_days(landings: pl.DataFrame, expected: dict[str, list[str]], first: date, end: date) -> list[date]:
    """The days in [first, end) on which every expected cluster and source landed ('ok' or 'gap')."""
    ok = {(r["cluster"], r["source"], r["day"]) for r in landings.iter_rows(named=True) if r["status"] in LANDED}
    days = [first + timedelta(days=i) for i in range((end - first).days)]
    pairs = [(cluster, source) for cluster, sources in expected.items() for source in sources]
    return [day for day in days if all((cluster, source, day) in ok for cluster, source in pairs)]


def coverage_gaps(landings: pl.DataFrame) -> pl.DataFrame:
    """The 'gap' landings (``landings``: meta.landings rows) as runs of consecutive days per
    cluster, source and cause (``GAP_SCHEMA``), in cluster, source and day order."""
    runs: list[dict] = []
    for r in landings.filter(pl.col("status") == GAP).sort("cluster", "source", "day").iter_rows(named=True):
        key = {"cluster": r["cluster"], "source": r["source"], "cause": r["detail"]}
        last = runs[-1] if runs else None
        if last is not None and last["key"] == key and last["last_day"] + timedelta(days=1) == r["day"]:
            last["last_day"], last["days"] = r["day"], last["days"] + 1
        else:
            runs.append({"key": key, "first_day": r["day"], "last_day": r["day"], "days": 1})
    return pl.DataFrame([{**run.pop("key"), **run} for run in runs], schema=GAP_SCHEMA)


def coverage_gap_lines(gaps: pl.DataFrame) -> list[str]:
    """``coverage_gaps`` as one line per cluster and source, e.g.
    ``cluster 'c1' dcgm: 2026-02-01..2026-02-19 (19 days) no series, before the first ever landed``."""
    lines = []
    for (cluster, source), group in gaps.group_by("cluster", "source", maintain_order=True):
        runs = [
            f"{_span(r['first_day'], r['last_day'])} {GAP_CAUSES.get(r['cause'], r['cause'] or 'cause not recorded')}"
            for r in group.iter_rows(named=True)
        ]
        lines.append(f"cluster {cluster!r} {source}: " + "; ".join(runs))
    return lines


@dataclass(frozen=True)
class Stale:
    """A cluster's source with no landed day since ``since`` (``newest`` None: never landed)."""

    cluster: str
    source: str
    newest: datetime | None


def stale_sources(newest: pl.DataFrame, expected: dict[str, list[str]], since: datetime) -> list[Stale]:
    """The expected (cluster, source) pairs whose newest landed day ('ok' or 'gap') (``newest``: cluster,
    source, landed_at) is before ``since``, or that never landed."""
    found = {(r["cluster"], r["source"]): r["landed_at"] for r in newest.iter_rows(named=True)}
    stale = []
    for cluster, sources in expected.items():
        for source in sources:
            landed = found.get((cluster, source))
            if landed is None or landed < since:
                stale.append(Stale(cluster, source, landed))
    return stale
