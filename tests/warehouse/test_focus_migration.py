"""Migration 0014 on a warehouse holding chargeback rows and a closed month from before it."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tests.support.chargeback_frames import MONTH, build
from tests.unit.test_chargeback_focus import CAPACITY, CONFIG, month_usage
from warehouse import connect, read_frame, replace_partition
from warehouse.books.ledger import INVOICE_ID
from warehouse.migrate import default_source

FOCUS_1_3 = [
    "AllocatedMethodDetails",
    "AllocatedMethodId",
    "AllocatedResourceId",
    "AllocatedResourceName",
    "HostProviderName",
    "ServiceProviderName",
]


def _migrations_before_0014(folder: Path) -> Path:
    folder.mkdir()
    for entry in default_source().iterdir():
        if entry.name.endswith(".sql") and entry.name < "0014":
            (folder / entry.name).write_text(entry.read_text())
    return folder


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(frame.columns, nulls_last=True)


def test_0014_keeps_the_rows_and_gives_closed_months_their_invoice(tmp_path: Path) -> None:
    now = build(month_usage(), CONFIG, CAPACITY).focus  # what the transform writes from now on
    database = tmp_path / "w.duckdb"
    with connect(database, migrations=_migrations_before_0014(tmp_path / "old")) as conn:
        old_columns = [
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = 'marts' "
                "AND table_name = 'fct_chargeback_focus' ORDER BY ordinal_position"
            ).fetchall()
        ]
        assert "InvoiceId" not in old_columns and set(FOCUS_1_3) <= set(old_columns)
        before = now.with_columns(pl.lit("RC").alias(c) for c in FOCUS_1_3).select(old_columns)
        replace_partition(conn, "marts.fct_chargeback_focus", before, {"billing_month": MONTH, "charge_month": MONTH})
        # how `cardhours close` froze a month before 0014
        conn.execute(
            "INSERT INTO marts.chargeback_ledger SELECT *, TIMESTAMP '2026-11-02 09:00:00' "
            "FROM marts.fct_chargeback_focus"
        )
    with connect(database) as conn:
        mart = read_frame(conn, "SELECT * FROM marts.fct_chargeback_focus")
        # ledger_seq and row_hash come with a later migration (the hash chain), null until a close chains them
        ledger = read_frame(conn, "SELECT * EXCLUDE (closed_at, ledger_seq, row_hash) FROM marts.chargeback_ledger")
        close_gives = conn.execute(f"SELECT DISTINCT {INVOICE_ID} FROM marts.chargeback_ledger").fetchall()
    assert mart.columns == now.columns and _sorted(mart).equals(_sorted(now))
    assert set(ledger["InvoiceId"]) == {"acct-2026-10"} and close_gives == [("acct-2026-10",)]
    assert _sorted(ledger.with_columns(pl.lit(None, pl.String).alias("InvoiceId"))).equals(_sorted(now))
    assert ledger.height == now.height == 20
