"""`cardhours close` refuses a month that is incomplete, too recent, stale or does not recompute,
naming what is wrong; --accept-gaps closes over gaps (never over blockers) and stores the reason."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import polars as pl
import pytest
from dagster import materialize

from config import load_config
from contracts.sources import BEFORE_FIRST_SAMPLE, NO_JOBS
from pipelines.assets.chargeback import fct_chargeback_jobs_asset
from pipelines.assets.gate import month_landed
from pipelines.assets.reports import read_review_frames
from pipelines.resources import CardhoursResource
from reports.chargeback_section import chargeback_section
from tests.support.chargeback_site import AUG, august, build, close, database, lake, make_site, put_usage, rows
from tests.support.landings import LANDED_AT
from transforms.marts.mart_cluster_monthly import SCHEMA as CLUSTER_SCHEMA
from warehouse import connect, replace_partition
from warehouse.books.close import close_month
from warehouse.books.close_conditions import month_conditions
from warehouse.books.ledger import CloseError
from warehouse.landings import GAP, Landing, record_landing

LATE = datetime(2026, 12, 1)  # long after August's grace period
GAPS = 'Gaps: land or wait for them, or close anyway with --accept-gaps "reason" (stored with the month):'
FIX = "Fix these, then close again (--accept-gaps does not override them):"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return make_site(tmp_path)


def _close(site: Path, now: datetime = LATE, accept_gaps: str | None = None):
    with connect(database(site)) as conn:
        return close_month(conn, load_config(site), AUG, now, accept_gaps)


def _refusal(site: Path, now: datetime = LATE, accept_gaps: str | None = None) -> str:
    with pytest.raises(CloseError) as refused:
        _close(site, now, accept_gaps)
    assert rows(site, "SELECT count(*) AS n FROM marts.chargeback_ledger")["n"][0] == 0
    return str(refused.value)


def test_a_missing_day_refuses_until_accepted_then_the_reason_is_stored_and_shown(site: Path) -> None:
    put_usage(site, AUG, august(), skip={date(2026, 8, 17), date(2026, 8, 18), date(2026, 8, 31)})
    build(site, AUG, accept_gaps="exporter on n1 down")  # the monthly job builds over them only with a reason
    days = "2026-08-17..2026-08-18 (2 days) missing; 2026-08-31 missing"
    gap = f"not landed: cluster 'c1' dcgm: {days}\nnot landed: cluster 'c1' sacct: {days}"
    refused = close(site, "2026-08")
    assert refused.exit_code == 1
    flat = refused.output.replace("\n", " ")
    assert flat.startswith(f"not closed: 2026-08 is not closed. {GAPS}   - {gap.replace(chr(10), '   - ')}")
    reason = "exporter on n1 down 08-17 to 08-18, 08-31 lost with it; agreed with finance"
    closed = close(site, "2026-08", "--accept-gaps", reason)
    assert closed.exit_code == 0, closed.output
    assert f"gaps accepted: {reason}" in closed.output
    record = rows(site, "SELECT accepted_gaps, gaps, focus_rows FROM marts.chargeback_closed_months")
    assert record.rows() == [(reason, gap, 18)]
    with connect(database(site)) as conn:
        frames = read_review_frames(conn, AUG)
    section = chargeback_section(frames["reconciliation"], frames["focus"], "2026-08", "EUR", frames["closed"])
    html = str(section.render())  # plain text: Markup.replace would escape its arguments
    shown = gap.replace(chr(10), "; ")
    assert f"2026-08 was closed with accepted gaps: {reason} (gaps: {shown})." in html.replace("&#39;", "'")
    assert "2026-08 is closed (since " in html


def test_a_month_in_its_grace_period_waits(site: Path) -> None:
    put_usage(site, AUG, august())
    build(site, AUG)
    assert _refusal(site, datetime(2026, 9, 3, 12)) == (
        f"2026-08 is not closed.\n{GAPS}\n  - 2026-08 may close from 2026-09-06 00:00Z (the month's end + "
        "close.grace_days = 5 for late accounting); it is 2026-09-03 12:00Z"
    )
    closed = _close(site, datetime(2026, 9, 6))
    assert (closed.focus_rows, closed.job_lines, closed.accepted_gaps) == (18, 6, None)


def test_stale_marts_refuse_even_with_accept_gaps(site: Path) -> None:
    put_usage(site, AUG, august())
    build(site, AUG)
    with connect(database(site)) as conn:  # day 9 landed again after the build
        record_landing(
            conn,
            lake(site),
            Landing("c1", date(2026, 8, 9), "dcgm", datetime(2026, 9, 10, 8), rows=120, quarantined=0, screened=120),
        )
    stale = (
        "the marts of 2026-08 are stale: 1 landing(s) came after its last build (built over landings through "
        "2026-01-01 00:00:00Z), the latest cluster 'c1' dcgm 2026-08-09 at 2026-09-10 08:00:00Z: run the month "
        "again (cardhours run --month 2026-08)"
    )
    assert _refusal(site, accept_gaps="close anyway") == f"2026-08 is not closed.\n{FIX}\n  - {stale}"
    build(site, AUG)  # the month built again over the new landing
    assert _close(site).focus_rows == 18


def test_a_run_killed_between_the_job_and_focus_assets(site: Path) -> None:
    put_usage(site, AUG, august())
    build(site, AUG)
    site.write_text(site.read_text().replace("H100 = 2.5", "H100 = 3.0"))  # the next run prices at 3.00 ...
    result = materialize(
        [month_landed, fct_chargeback_jobs_asset],
        partition_key=AUG.isoformat(),  # ... and dies
        resources={"cardhours": CardhoursResource(config_path=str(site))},
    )
    assert result.success
    refusal = _refusal(site)
    started = rows(site, "SELECT started_at FROM meta.monthly_builds")["started_at"][0]
    assert refusal.startswith(
        f"2026-08 is not closed.\n{FIX}\n  - the last monthly build of 2026-08 (started {started:%Y-%m-%d %H:%M:%S}Z) "
        "did not finish, so its marts may be half rewritten: run the month again (cardhours run --month 2026-08)\n"
    )
    # the job detail was rewritten at 3.00 and recomputes; the FOCUS rows still say 2.50
    assert "marts.fct_chargeback_jobs" not in refusal
    assert (
        "  - the stored marts differ from a recomputation: marts.fct_chargeback_focus row (cluster 'c1', "
        "x_ChargeKind 'usage', SubAccountId 'nlp', SkuPriceId 'H100|gpu|normal|2026-08-01T00:00:00Z'): "
        "BilledCost stored 30.00, recomputed 36.00; ContractedCost stored 30.00, recomputed 36.00; "
        "ContractedUnitPrice stored 2.500000, recomputed 3.000000; EffectiveCost stored 30.00, recomputed 36.00; "
        "ListCost stored 30.00, recomputed 36.00; ListUnitPrice stored 2.500000, recomputed 3.000000\n"
    ) in refusal


def test_a_tampered_mart_price_does_not_recompute(site: Path) -> None:
    put_usage(site, AUG, august())
    build(site, AUG)
    with connect(database(site)) as conn:
        conn.execute(
            "UPDATE marts.fct_chargeback_focus SET ContractedUnitPrice = 3.0 WHERE SubAccountId = 'speech' "
            "AND x_ChargeKind = 'usage' AND SkuId = 'H100'"
        )
    assert _refusal(site) == (
        f"2026-08 is not closed.\n{FIX}\n  - the stored marts differ from a recomputation: marts.fct_chargeback_focus "
        "row (cluster 'c1', x_ChargeKind 'usage', SubAccountId 'speech', SkuPriceId "
        "'H100|gpu|normal|2026-08-01T00:00:00Z'): ContractedUnitPrice stored 3.000000, recomputed 2.500000"
    )
    refused = close(site, "2026-08", "--accept-gaps", "anyway")
    assert refused.exit_code == 1 and "ContractedUnitPrice stored 3.000000, recomputed 2.500000" in refused.output


def test_coverage_and_quarantine_limits(site: Path) -> None:
    put_usage(site, AUG, august())
    with connect(database(site)) as conn:
        record_landing(
            conn,
            lake(site),
            Landing("c1", date(2026, 8, 12), "dcgm", LANDED_AT, rows=100, quarantined=400, screened=500),
        )
        replace_partition(
            conn, "marts.mart_cluster_monthly", rows_frame(cluster="c1", month=AUG, sample_coverage=0.8), {"month": AUG}
        )
        conditions = month_conditions(conn, load_config(site), AUG, LATE)
    assert conditions.gaps == [
        "cluster 'c1': sample coverage 80.0% below close.min_coverage 90.0% (marts.mart_cluster_monthly)",
        "cluster 'c1' dcgm: 11.43% quarantined (400 of 3,500) over close.max_quarantine_share 1.00%",
    ]
    assert conditions.blockers == [
        "no monthly build of 2026-08 is recorded: run the month again (cardhours run --month 2026-08)"
    ]


def test_coverage_gaps_are_listed_and_do_not_block(site: Path) -> None:
    """A day a source answered with nothing landed ('gap'): close lists it and closes; its lost
    samples would count through the sample coverage (a gap of its own never refuses)."""
    put_usage(site, AUG, august(), skip={date(2026, 8, 1), date(2026, 8, 2), date(2026, 8, 3)})
    with connect(database(site)) as conn:  # before the first sample on the 1st to 3rd; no job on the 2nd
        for day, source, cause in [(d, "dcgm", BEFORE_FIRST_SAMPLE) for d in (1, 2, 3)] + [(2, "sacct", NO_JOBS)]:
            gap = Landing("c1", date(2026, 8, day), source, LANDED_AT, GAP, 0, 0, 0, cause)
            record_landing(conn, lake(site), gap)
        record_landing(conn, lake(site), Landing("c1", date(2026, 8, 1), "sacct", LANDED_AT, rows=10, screened=10))
        record_landing(conn, lake(site), Landing("c1", date(2026, 8, 3), "sacct", LANDED_AT, rows=10, screened=10))
    build(site, AUG)  # no accept_gaps: the gate counts a gap as landed
    closed = close(site, "2026-08")
    assert closed.exit_code == 0, closed.output
    assert [line.strip() for line in closed.output.splitlines() if "coverage gap" in line] == [
        "coverage gap (listed, not blocking): cluster 'c1' dcgm: 2026-08-01..2026-08-03 (3 days) no series, "
        "before the first ever landed",
        "coverage gap (listed, not blocking): cluster 'c1' sacct: 2026-08-02 no jobs",
    ]
    record = rows(site, "SELECT accepted_gaps, gaps FROM marts.chargeback_closed_months")
    assert record.rows() == [(None, None)]


def rows_frame(**values) -> pl.DataFrame:
    """One marts.mart_cluster_monthly row with ``values``, the other columns null."""
    return pl.DataFrame([values]).select(
        (pl.col(c) if c in values else pl.lit(None)).cast(t).alias(c) for c, t in CLUSTER_SCHEMA.items()
    )
