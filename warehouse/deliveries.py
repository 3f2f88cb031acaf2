"""meta.deliveries (migration 0028): which month's mail went to whom, so a rerun sends only
what is missing and a re-send is an explicit choice (``cardhours deliver --resend``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

import duckdb
import polars as pl

from warehouse.connection import read_frame

DELIVERIES = "meta.deliveries"
DELIVERY_SCHEMA = {
    "month": pl.Date,
    "audience": pl.String,
    "recipient": pl.String,
    "subject": pl.String,
    "digest": pl.String,
    "sent_at": pl.Datetime("us"),
}


@dataclass(frozen=True)
class Delivery:
    """One message accepted by the relay for one recipient."""

    month: date
    audience: str
    recipient: str
    subject: str
    digest: str
    sent_at: datetime


def sent(conn: duckdb.DuckDBPyConnection, month: date) -> dict[tuple[str, str], Delivery]:
    """(audience, recipient) -> its recorded delivery of ``month``."""
    columns = ", ".join(DELIVERY_SCHEMA)
    rows = read_frame(conn, f"SELECT {columns} FROM meta.deliveries WHERE month = ?", [month])
    return {(r["audience"], r["recipient"]): Delivery(**r) for r in rows.iter_rows(named=True)}


def record(conn: duckdb.DuckDBPyConnection, delivery: Delivery) -> None:
    """Record ``delivery`` (replacing an earlier one of the same month, audience and recipient)."""
    columns = list(DELIVERY_SCHEMA)
    values = [getattr(delivery, name) for name in columns]
    conn.execute(
        f"INSERT OR REPLACE INTO meta.deliveries ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        values,
    )
