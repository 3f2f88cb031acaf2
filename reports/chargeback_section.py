"""The chargeback reconciliation section of the monthly review (pure: frames in, Section out;
markup in ``templates/sections/chargeback.html``)."""

from __future__ import annotations

from typing import Any

import polars as pl

from reports.html import Column, Section, table

CHECK_LABELS = {
    "capacity_balanced": "charged + idle = capacity",
    "cost_balanced": "cost = quantity x price (cent)",
    "departments_balanced": "departments = job detail",
    "jobs_balanced": "every job in one row",
}


def _money(value: Any) -> str:
    return "n/a" if value is None else f"{value:,.2f}"


def _hours(value: Any) -> str:
    return "n/a" if value is None else f"{value:,.1f}"


def _ok(value: Any) -> str:
    return "ok" if value else "FAILED"


def _departments(focus: pl.DataFrame) -> pl.DataFrame:
    usage = pl.col("x_ChargeKind") == "usage"
    return (
        focus.group_by("cluster", pl.col("SubAccountId").alias("department"))
        .agg(
            pl.col("PricingQuantity").filter(usage).sum().alias("gpu_hours"),
            pl.col("BilledCost").filter(usage).sum().alias("usage_cost"),
            pl.col("BilledCost").filter(~usage).sum().alias("idle_cost"),
            pl.col("BilledCost").filter(pl.col("ChargeClass") == "Correction").sum().alias("correction_cost"),
            pl.col("BilledCost").sum().alias("total_cost"),
        )
        .sort("cluster", "total_cost", "department", descending=[False, True, False])
    )


def closed_lines(closed: pl.DataFrame, month: str) -> list[str]:
    """One sentence for the month if it is closed, and one per closed month with accepted gaps.
    ``closed``: marts.chargeback_closed_months rows up to the month."""
    lines = []
    for r in closed.sort("billing_month").iter_rows(named=True):
        name = f"{r['billing_month']:%Y-%m}"
        head = f", head hash {r['head_hash']}" if r.get("head_hash") else ""
        if name == month:
            lines.append(
                f"{month} is closed (since {r['closed_at']:%Y-%m-%d %H:%M}Z{head}): its ledger rows are "
                "frozen; later changes are Correction rows in the next open month."
            )
        if r.get("accepted_gaps"):
            gaps = "; ".join((r.get("gaps") or "").splitlines())
            lines.append(
                f"{name} was closed with accepted gaps: {r['accepted_gaps']} (gaps: {gaps or 'not recorded'})."
            )
    return lines


def chargeback_section(
    reconciliation: pl.DataFrame, focus: pl.DataFrame, month: str, currency: str, closed: pl.DataFrame | None = None
) -> Section:
    """``reconciliation``: marts.mart_chargeback_reconciliation rows of the month;
    ``focus``: marts.fct_chargeback_focus rows of the billing month (regular + corrections);
    ``closed``: marts.chargeback_closed_months rows up to the month (closed months, accepted gaps)."""
    notes = closed_lines(closed, month) if closed is not None else []
    values: dict = {"month": month, "currency": currency, "notes": notes, "clusters": None}
    if reconciliation.is_empty():
        return Section("chargeback", "Chargeback reconciliation", "sections/chargeback.html", values)
    values["failed"] = [label for flag, label in CHECK_LABELS.items() if not reconciliation.get_column(flag).all()]
    values["clusters"] = table(
        reconciliation,
        [
            Column("cluster", "Cluster"),
            Column("capacity_gpu_hours", "Capacity (GPU-h)", _hours, numeric=True),
            Column("charged_gpu_hours", "Charged (GPU-h)", _hours, numeric=True),
            Column("idle_gpu_hours", "Idle (GPU-h)", _hours, numeric=True),
            Column("billed_cost", f"Billed ({currency})", _money, numeric=True),
            Column("idle_cost", f"Idle cost ({currency})", _money, numeric=True),
            Column("correction_cost", f"Corrections ({currency})", _money, numeric=True),
            Column("job_detail_cost", f"Job detail ({currency})", _money, numeric=True),
            *[Column(flag, label, _ok) for flag, label in CHECK_LABELS.items()],
        ],
    )
    values["departments"] = table(
        _departments(focus),
        [
            Column("cluster", "Cluster"),
            Column("department", "Department (SubAccount)", wrap=True),
            Column("gpu_hours", "Charged GPU-h", _hours, numeric=True),
            Column("usage_cost", f"Usage ({currency})", _money, numeric=True),
            Column("idle_cost", f"Idle share ({currency})", _money, numeric=True),
            Column("correction_cost", f"Corrections ({currency})", _money, numeric=True),
            Column("total_cost", f"Total ({currency})", _money, numeric=True),
        ],
    )
    return Section("chargeback", "Chargeback reconciliation", "sections/chargeback.html", values)
