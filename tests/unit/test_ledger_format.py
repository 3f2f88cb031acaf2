"""The documented formats of the close: the canonical row text and link of the hash chain, and the
landing gaps named day by day (docs/chargeback.md, "Closed months")."""

from __future__ import annotations

import hashlib
from datetime import date, datetime
from decimal import Decimal

import polars as pl

from warehouse.books.landings import landing_gaps
from warehouse.books.ledger_chain import GENESIS, canonical, chain, link

SCHEMA = {
    "billing_month": pl.Date(),
    "SubAccountName": pl.String(),
    "BilledCost": pl.Decimal(18, 2),
    "PricingQuantity": pl.Decimal(18, 6),
    "ChargePeriodStart": pl.Datetime("us"),
    "x_JobCount": pl.Int64(),
    "ChargeClass": pl.String(),
    "ledger_seq": pl.Int64(),
    "row_hash": pl.String(),
}
ROW = {
    "billing_month": date(2026, 8, 1),
    "SubAccountName": "Sprache & Audio",
    "BilledCost": Decimal("12.4"),
    "PricingQuantity": Decimal("-3"),
    "ChargePeriodStart": datetime(2026, 8, 20, 6, 30, 15),
    "x_JobCount": 2,
    "ChargeClass": None,
    "ledger_seq": 7,
    "row_hash": "ignored",
}


def test_canonical_text_sorts_keys_fixes_scales_and_leaves_out_nulls_and_the_hash() -> None:
    assert canonical(pl.DataFrame([ROW], schema=SCHEMA), "marts.chargeback_ledger") == [
        (
            '{"BilledCost":"12.40","ChargePeriodStart":"2026-08-20T06:30:15.000000","PricingQuantity":"-3.000000",'
            '"SubAccountName":"Sprache & Audio","billing_month":"2026-08-01","ledger_seq":"7","x_JobCount":"2"}'
        )
    ]


def test_each_hash_covers_the_previous_one_and_the_table() -> None:
    text = canonical(pl.DataFrame([ROW], schema=SCHEMA), "marts.chargeback_ledger")[0]
    first = link(GENESIS, "marts.chargeback_ledger", text)
    assert first == hashlib.sha256(f"{GENESIS}\nmarts.chargeback_ledger\n{text}".encode()).hexdigest()
    assert link(GENESIS, "marts.chargeback_ledger_jobs", text) != first
    frame = pl.DataFrame([ROW, {**ROW, "x_JobCount": 3}], schema=SCHEMA)
    chained, last = chain(frame, "marts.chargeback_ledger", GENESIS, 41)
    assert chained["ledger_seq"].to_list() == [41, 42]
    second = link(chained["row_hash"][0], "marts.chargeback_ledger", canonical(chained, "marts.chargeback_ledger")[1])
    assert chained["row_hash"][1] == second == last


def test_landing_gaps_merge_consecutive_days_per_cluster_and_source() -> None:
    landings = pl.DataFrame(
        {
            "cluster": ["a", "a", "a", "b"],
            "day": [date(2026, 2, d) for d in (1, 2, 4, 1)],
            "source": ["dcgm", "dcgm", "dcgm", "sacct"],
            "status": ["ok", "failed", "ok", "rejected"],
            "detail": [None, "ReadError: timeout", None, None],
        }
    )
    gaps = landing_gaps(landings, {"a": ["dcgm"], "b": ["sacct"]}, date(2026, 2, 1), date(2026, 2, 6))
    assert gaps == [
        "cluster 'a' dcgm: 2026-02-02 failed (ReadError: timeout); 2026-02-03 missing; 2026-02-05 missing",
        "cluster 'b' sacct: 2026-02-01 rejected; 2026-02-02..2026-02-05 (4 days) missing",
    ]
