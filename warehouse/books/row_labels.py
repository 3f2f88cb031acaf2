"""How a person is told which chargeback row is meant: a few identifying columns per table."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

FOCUS = ["cluster", "x_ChargeKind", "SubAccountId", "SkuPriceId", "ChargeClass"]
JOBS = ["cluster", "job_id_raw", "start_time", "charge_period_start", "sku_price_id", "charge_class"]
LABELS = {
    "marts.fct_chargeback_focus": FOCUS,
    "marts.chargeback_ledger": FOCUS,
    "marts.fct_chargeback_jobs": JOBS,
    "marts.chargeback_ledger_jobs": JOBS,
    "marts.mart_chargeback_reconciliation": ["cluster", "month"],
    "marts.chargeback_closed_months": ["billing_month"],
}


def _value(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return repr(value) if isinstance(value, str) else str(value)


def describe(table: str, row: Mapping[str, object]) -> str:
    """``cluster 'c1', job_id_raw '101', start_time 2026-08-20 01:00:00`` (null columns left out)."""
    return ", ".join(f"{name} {_value(row[name])}" for name in LABELS[table] if row.get(name) is not None)
