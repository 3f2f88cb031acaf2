"""Chargeback through Dagster on a temp DuckDB: the assets, `cardhours close`, late data ->
corrections in the next open month, closed rows unchanged, totals that add up, idempotent reruns."""

from __future__ import annotations

import hashlib
import shutil
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from tests.support.chargeback_site import AUG, OCT, SEP, august, build, make_site, put_usage, rows, run
from tests.support.chargeback_site import close as _close
from tests.support.focus_conformance import csv_problems, parquet_problems
from warehouse import connect

LEDGER_TABLES = ["marts.chargeback_ledger", "marts.chargeback_ledger_jobs"]
FACT_TABLES = ["marts.fct_chargeback_focus", "marts.fct_chargeback_jobs", "marts.mart_chargeback_reconciliation"]
_usage, _materialize, _rows = put_usage, build, rows


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return make_site(tmp_path)


def _digest(site: Path, tables: list[str]) -> dict[str, str]:
    out = {}
    for table in tables:
        frame = _rows(site, f"SELECT * FROM {table}")  # table names from the fixed lists above
        out[table] = hashlib.sha256(frame.sort(frame.columns, nulls_last=True).write_csv().encode()).hexdigest()
    return out


def test_close_late_data_corrections_and_reruns(site: Path) -> None:
    _usage(site, AUG, august())
    assert all(_materialize(site, AUG).values())
    reports = site.parent / "reports"
    assert csv_problems(reports / "2026-08" / "chargeback_focus.csv") == []
    assert parquet_problems(reports / "2026-08" / "chargeback_focus.parquet") == []
    first = _digest(site, FACT_TABLES)
    _materialize(site, AUG)  # rerunning the open month gives identical rows
    assert _digest(site, FACT_TABLES) == first
    october_total = _rows(site, "SELECT sum(BilledCost) AS c FROM marts.fct_chargeback_focus")["c"][0]
    assert _rows(site, "SELECT billed_cost FROM marts.mart_chargeback_reconciliation")["billed_cost"].to_list() == [
        october_total
    ]

    closed = _close(site, "2026-08")
    assert closed.exit_code == 0, closed.output
    assert "month 2026-08 closed" in closed.output and "chargeback_focus.csv" in closed.output
    assert str(site.parent / "wh" / "cardhours.duckdb") in closed.output.replace("\n", "")
    ledger = _digest(site, LEDGER_TABLES)
    # the close rewrote August's files from the ledger: its invoice on every row
    august_file = pl.read_csv(reports / "2026-08" / "chargeback_focus.csv", infer_schema=False)
    assert set(august_file["InvoiceId"]) == {"cardhours-2026-08"} and august_file.height == 18
    assert csv_problems(reports / "2026-08" / "chargeback_focus.csv") == []

    # late data: an extra sacct run and the 'legacy' account mapped to speech
    late = [r if r["account"] != "legacy" else {**r, "department": "speech", "division": "research"} for r in august()]
    late.append(run("107", datetime(2026, 8, 19, 23), 2, gpus=2))
    _usage(site, AUG, late)
    assert all(_materialize(site, AUG).values())
    assert _digest(site, LEDGER_TABLES) == ledger
    fixes = _rows(site, "SELECT * FROM marts.fct_chargeback_focus WHERE ChargeClass = 'Correction'")
    assert fixes.height > 0 and set(fixes["billing_month"]) == {SEP} and set(fixes["charge_month"]) == {AUG}
    regular = _rows(site, "SELECT * FROM marts.fct_chargeback_focus WHERE billing_month = ?", [AUG])
    frozen = _rows(site, "SELECT * EXCLUDE (closed_at, ledger_seq, row_hash) FROM marts.chargeback_ledger")
    assert regular["InvoiceId"].null_count() == regular.height and set(frozen["InvoiceId"]) == {"cardhours-2026-08"}
    frozen = frozen.with_columns(pl.lit(None, pl.String).alias("InvoiceId"))  # the only column close sets
    assert regular.sort(regular.columns, nulls_last=True).equals(frozen.sort(frozen.columns, nulls_last=True))
    assert fixes["InvoiceId"].null_count() == fixes.height  # September's, once September is closed
    added = Decimal("2") * 2 * Decimal("2.5")  # 2 GPUs x 2 h before the price change
    total = _rows(site, "SELECT sum(BilledCost) AS c FROM marts.fct_chargeback_focus WHERE x_ChargeKind = 'usage'")[
        "c"
    ][0]
    assert total == _rows(site, "SELECT sum(cost) AS c FROM marts.fct_chargeback_jobs")["c"][0]
    assert fixes.filter(pl.col("x_ChargeKind") == "usage")["BilledCost"].sum() == added
    assert csv_problems(reports / "2026-09" / "chargeback_focus.csv") == []
    rerun = _digest(site, FACT_TABLES)
    _materialize(site, AUG)  # rerunning the closed month again: the same corrections, nothing twice
    assert _digest(site, FACT_TABLES) == rerun

    # November: built, closed with October's corrections in it
    _usage(
        site,
        SEP,
        [run("200", datetime(2026, 9, 3), 5, month_start=datetime(2026, 9, 1), month_end=datetime(2026, 10, 1))],
    )
    assert all(_materialize(site, SEP).values())
    assert _close(site, "2026-09").exit_code == 0
    booked = _rows(
        site,
        "SELECT count(*) AS n FROM marts.chargeback_ledger WHERE billing_month = ? AND ChargeClass = 'Correction'",
        [SEP],
    )
    assert booked["n"][0] == fixes.height
    invoices = _rows(
        site, "SELECT billing_month, InvoiceId, count(*) AS n FROM marts.chargeback_ledger GROUP BY ALL ORDER BY ALL"
    )
    assert invoices.rows() == [(AUG, "cardhours-2026-08", 18), (SEP, "cardhours-2026-09", fixes.height + 4)]
    september_file = pl.read_csv(reports / "2026-09" / "chargeback_focus.csv", infer_schema=False)
    assert set(september_file["InvoiceId"]) == {"cardhours-2026-09"}
    ledger = _digest(site, LEDGER_TABLES)

    # more late data for October: a correction of the correction, booked in December
    later = [*late, run("108", datetime(2026, 8, 25), 5, department="speech")]
    _usage(site, AUG, later)
    assert all(_materialize(site, AUG).values())
    assert _digest(site, LEDGER_TABLES) == ledger
    october_fixes = _rows(site, "SELECT * FROM marts.fct_chargeback_focus WHERE billing_month = ?", [OCT])
    assert set(october_fixes["ChargeClass"]) == {"Correction"}
    assert october_fixes.filter(pl.col("x_ChargeKind") == "usage")["BilledCost"].sum() == Decimal("14.00")  # 5 h x 2.8
    all_october = _rows(
        site, "SELECT sum(PricingQuantity) AS q FROM marts.fct_chargeback_focus WHERE charge_month = ?", [AUG]
    )
    assert all_october["q"][0] == Decimal("3720.000000")  # capacity: (4 + 6/7 + 1/7) GPUs x 744 h
    assert (reports / "2026-10" / "chargeback_focus.csv").is_file()


def test_close_command_exit_codes_and_messages(site: Path) -> None:
    assert _close(site, "2026-13").exit_code == 2
    missing = _close(site, "2026-08")
    assert missing.exit_code == 1 and "no warehouse" in missing.output
    _usage(site, AUG, august())
    not_built = _close(site, "2026-08")
    assert not_built.exit_code == 1 and "run the month first" in not_built.output
    _materialize(site, AUG)
    with connect(site.parent / "wh" / "cardhours.duckdb") as conn:
        conn.execute("UPDATE marts.mart_chargeback_reconciliation SET jobs_balanced = false")
    failing = _close(site, "2026-08")
    assert failing.exit_code == 1 and "does not reconcile" in failing.output and "jobs_balanced" in failing.output
    assert _rows(site, "SELECT count(*) AS n FROM marts.chargeback_ledger")["n"][0] == 0
    _materialize(site, AUG)
    folder = site.parent / "reports" / "2026-08"
    shutil.rmtree(folder)
    folder.write_text("")  # the month's files cannot be written
    unwritten = _close(site, "2026-08")
    assert unwritten.exit_code == 1 and "closed, but its files are not written" in unwritten.output
    assert "run cardhours close again, which writes them" in unwritten.output.replace("\n", " ")
    folder.unlink()
    again = _close(site, "2026-08")
    assert again.exit_code == 0 and "already closed" in again.output and "ledger unchanged" in again.output
    assert set(pl.read_csv(folder / "chargeback_focus.csv", infer_schema=False)["InvoiceId"]) == {"cardhours-2026-08"}
