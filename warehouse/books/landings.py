"""Which days of a month have landed: the expected landings of a config, and the gaps.

A month is complete when every configured cluster has an 'ok' landing (meta.landings) of
every UTC day for each of its sources: ``dcgm`` always, ``sacct`` with a ``[clusters.slurm]``
section, ``kube`` with a ``[clusters.kubernetes]`` one. The monthly job's gate
(pipelines/assets/gate.py), ``cardhours close`` (warehouse/books/close_conditions.py) and the monthly
review sensor (pipelines/review_sensor.py) all ask ``landing_gaps``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

import polars as pl

from config import Config
from sources.kube.landing import SOURCE as KUBE
from transforms.helpers.dcgm_quality import SOURCE as DCGM
from warehouse.landings import OK

SACCT = "sacct"
__all__ = ["DCGM", "KUBE", "SACCT", "Stale", "expected_sources", "landed_days", "landing_gaps", "stale_sources"]


def expected_sources(config: Config) -> dict[str, list[str]]:
    """cluster -> the sources that land a day for it."""
    return {
        cluster.name: [DCGM, *([SACCT] if cluster.slurm else []), *([KUBE] if cluster.kubernetes else [])]
        for cluster in config.clusters
    }


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
    """One line per cluster and source with days in [first, end) not landed 'ok', e.g.
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
                elif row["status"] != OK:
                    detailed = details and row["detail"]
                    problems.append((day, f"{row['status']} ({row['detail']})" if detailed else row["status"]))
            if problems:
                text = "; ".join(f"{_span(a, b)} {why}" for a, b, why in _runs(problems))
                lines.append(f"cluster {cluster!r} {source}: {text}")
    return lines


def landed_days(landings: pl.DataFrame, expected: dict[str, list[str]], first: date, end: date) -> list[date]:
    """The days in [first, end) on which every expected cluster and source landed 'ok'."""
    ok = {(r["cluster"], r["source"], r["day"]) for r in landings.iter_rows(named=True) if r["status"] == OK}
    days = [first + timedelta(days=i) for i in range((end - first).days)]
    pairs = [(cluster, source) for cluster, sources in expected.items() for source in sources]
    return [day for day in days if all((cluster, source, day) in ok for cluster, source in pairs)]


@dataclass(frozen=True)
class Stale:
    """A cluster's source with no 'ok' landing since ``since`` (``newest`` None: never landed)."""

    cluster: str
    source: str
    newest: datetime | None


def stale_sources(newest: pl.DataFrame, expected: dict[str, list[str]], since: datetime) -> list[Stale]:
    """The expected (cluster, source) pairs whose newest 'ok' landing (``newest``: cluster,
    source, landed_at) is before ``since``, or that never landed."""
    found = {(r["cluster"], r["source"]): r["landed_at"] for r in newest.iter_rows(named=True)}
    stale = []
    for cluster, sources in expected.items():
        for source in sources:
            landed = found.get((cluster, source))
            if landed is None or landed < since:
                stale.append(Stale(cluster, source, landed))
    return stale
