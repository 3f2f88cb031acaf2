"""FOCUS 1.2 InvoiceId and ServiceSubcategory: their values, corrections' invoice, and the
conformance checks of tests/support/focus_conformance.py that hold the 1.2 rules for them."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from reports.focus_export import write_chargeback_files
from tests.support.chargeback_frames import build
from tests.support.focus_conformance import csv_problems
from tests.unit.test_chargeback_focus import CAPACITY, CONFIG, NEXT, _late, month_usage
from transforms.marts.fct_chargeback_focus import focus_corrections


def test_every_row_is_other_compute_without_an_invoice_while_open() -> None:
    focus = build(month_usage(), CONFIG, CAPACITY).focus
    kinds = set(focus.select("x_ChargeKind", "ServiceCategory", "ServiceSubcategory").unique().iter_rows())
    assert kinds == {("usage", "Compute", "Other (Compute)"), ("idle_capacity", "Compute", "Other (Compute)")}
    assert focus["InvoiceId"].null_count() == focus.height == 20


def test_corrections_are_not_on_the_closed_months_invoice() -> None:
    closed = build(month_usage(), CONFIG, CAPACITY).focus
    ledger = closed.with_columns(pl.lit("acct-2026-10").alias("InvoiceId"))  # as `cardhours close` froze them
    fixes = focus_corrections(build(_late(month_usage()), CONFIG, CAPACITY).focus, ledger, NEXT)
    reversed_rows = fixes.filter(pl.col("SubAccountId") == "unmapped")  # only the ledger has these rows
    assert reversed_rows.height == 5 and fixes.height == 15
    assert fixes["InvoiceId"].null_count() == 15  # November's invoice, once November is closed


def _rewrite(path: Path, **columns: list[str | None]) -> list[str]:
    frame = pl.read_csv(path, infer_schema=False)
    frame.with_columns(
        pl.Series(name, values + frame[name].to_list()[len(values) :]) for name, values in columns.items()
    ).write_csv(path)
    return csv_problems(path)


def test_conformance_holds_the_focus_1_2_rules_for_the_new_columns(tmp_path: Path) -> None:
    built = build(month_usage(), CONFIG, CAPACITY)
    path = write_chargeback_files(built.focus, built.jobs, tmp_path, "2026-10")["focus_csv"]
    assert csv_problems(path) == []
    assert _rewrite(path, ServiceSubcategory=["GPU Compute", "Block Storage", None]) == [
        "row 0: ServiceSubcategory 'GPU Compute' is not a FOCUS 1.2 value under ServiceCategory 'Compute'",
        "row 1: ServiceSubcategory 'Block Storage' is not a FOCUS 1.2 value under ServiceCategory 'Compute'",
        "row 2: ServiceSubcategory is null",
    ]
    path = write_chargeback_files(built.focus, built.jobs, tmp_path, "2026-10")["focus_csv"]
    assert _rewrite(path, InvoiceId=["acct-2026-10"]) == [
        "InvoiceId null on 19 of 20 rows: a billing month has its invoice on every row or on none"
    ]
    assert _rewrite(path, InvoiceId=["acct-2026-10"] * 19 + ["acct-2026-1\u00f6"]) == [
        "BillingAccountId 'acct' has 2 InvoiceIds",
        "row 19: InvoiceId 'acct-2026-1\u00f6' has non-ASCII characters",
    ]
    assert _rewrite(path, InvoiceId=["acct-2026-10"] * 20) == []
