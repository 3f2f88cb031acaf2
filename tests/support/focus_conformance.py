"""FOCUS 1.2 conformance rules for the chargeback export, as a list of problems (empty = ok).

Written from the FOCUS 1.2 column requirements (FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec):
mandatory columns present and typed, nullability, allowed values, ISO 8601 UTC date-times with
``Z``, exclusive period ends, decimals as plain decimal text, custom columns ``x_``-prefixed
and after every FOCUS column, cost = unit price x pricing quantity where both are set.

The RECOMMENDED columns follow the FinOps Foundation's FOCUS 1.2 rules (ids of its validator's
model-1.2.json; why the validator is not run here: docs/chargeback.md, "FOCUS version"):
present (CostAndUsage-D-033-O, -D-042-O); ServiceSubcategory a string, never null, an allowed
value whose parent is the row's ServiceCategory (ServiceSubcategory-C-001-M..C-004-M); InvoiceId
a string of ASCII characters (InvoiceId-C-001-M, -C-002-M), null on every row of a billing month
without an invoice or set on every row of one that has it (-C-003-C: C-004-C or C-005-C; one
file is one billing month), and one invoice per billing account (-C-007-C).
"""

from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import polars as pl

from tests.support.focus_values import PARENT_CATEGORY, SERVICE_CATEGORIES

MANDATORY = [
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "ContractedCost",
    "EffectiveCost",
    "InvoiceIssuerName",
    "ListCost",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "ServiceCategory",
    "ServiceName",
]
CONDITIONAL = [
    "ConsumedQuantity",
    "ConsumedUnit",
    "ListUnitPrice",
    "ContractedUnitPrice",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "SkuId",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "Tags",
]
RECOMMENDED = ["InvoiceId", "ServiceSubcategory"]
OTHER_FOCUS = ["ChargeFrequency", "PricingCategory", "SkuMeter"]
NOT_NULL = [c for c in MANDATORY if c != "ChargeClass"] + ["ServiceSubcategory"]
DATETIMES = ["BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"]
DECIMALS = [
    "BilledCost",
    "ContractedCost",
    "EffectiveCost",
    "ListCost",
    "PricingQuantity",
    "ConsumedQuantity",
    "ListUnitPrice",
    "ContractedUnitPrice",
]
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_DECIMAL = re.compile(r"^-?\d+(\.\d+)?$")
_CENT = Decimal("0.01")


def _order_problems(columns: list[str]) -> list[str]:
    problems = [f"missing column {c}" for c in MANDATORY + CONDITIONAL + RECOMMENDED if c not in columns]
    focus = set(MANDATORY + CONDITIONAL + RECOMMENDED + OTHER_FOCUS)
    problems += [f"custom column {c} lacks the x_ prefix" for c in columns if c not in focus and not c.startswith("x_")]
    custom = [i for i, c in enumerate(columns) if c.startswith("x_")]
    if custom and any(i > min(custom) for i, c in enumerate(columns) if c in focus):
        problems.append("x_ columns must come after every FOCUS column")
    return problems


def _row_problems(index: int, row: dict[str, str | None]) -> list[str]:
    where = f"row {index}"
    problems = [f"{where}: {c} is null" for c in NOT_NULL if row.get(c) in (None, "")]
    problems += [
        f"{where}: {c}={row[c]!r} is not ISO 8601 UTC with Z"
        for c in DATETIMES
        if row.get(c) and not _TIME.match(row[c])
    ]
    problems += [
        f"{where}: {c}={row[c]!r} is not a plain decimal"
        for c in DECIMALS
        if row.get(c) not in (None, "") and not _DECIMAL.match(row[c])
    ]
    if problems:
        return problems
    if row["ChargeCategory"] != "Usage":
        problems.append(f"{where}: ChargeCategory {row['ChargeCategory']!r}")
    if row["ChargeClass"] not in (None, "", "Correction"):
        problems.append(f"{where}: ChargeClass {row['ChargeClass']!r}")
    if row["ServiceCategory"] not in SERVICE_CATEGORIES:
        problems.append(f"{where}: ServiceCategory {row['ServiceCategory']!r}")
    if PARENT_CATEGORY.get(row["ServiceSubcategory"]) != row["ServiceCategory"]:
        problems.append(
            f"{where}: ServiceSubcategory {row['ServiceSubcategory']!r} is not a FOCUS 1.2 value "
            f"under ServiceCategory {row['ServiceCategory']!r}"
        )
    if row.get("InvoiceId") and not row["InvoiceId"].isascii():
        problems.append(f"{where}: InvoiceId {row['InvoiceId']!r} has non-ASCII characters")
    if not re.fullmatch(r"[A-Z]{3}", row["BillingCurrency"]):
        problems.append(f"{where}: BillingCurrency {row['BillingCurrency']!r}")
    if not (row["BillingPeriodStart"] < row["BillingPeriodEnd"] and row["ChargePeriodStart"] < row["ChargePeriodEnd"]):
        problems.append(f"{where}: a period does not end after it starts")
    if not row["BillingPeriodStart"].endswith("-01T00:00:00Z") or not row["BillingPeriodEnd"].endswith("-01T00:00:00Z"):
        problems.append(f"{where}: billing period is not a calendar month [first, next first)")
    correction = row["ChargeClass"] == "Correction"
    inside = row["BillingPeriodStart"] <= row["ChargePeriodStart"] and row["ChargePeriodEnd"] <= row["BillingPeriodEnd"]
    if correction and row["ChargePeriodStart"] >= row["BillingPeriodStart"]:
        problems.append(f"{where}: a correction must belong to an earlier charge period")
    if not correction and not inside:
        problems.append(f"{where}: charge period outside its billing period")
    try:
        tags = json.loads(row.get("Tags") or "{}")
    except json.JSONDecodeError:
        tags = None
    if not isinstance(tags, dict):
        problems.append(f"{where}: Tags is not a JSON object")
    if row.get("ConsumedQuantity") and not row.get("ConsumedUnit"):
        problems.append(f"{where}: ConsumedUnit null with a ConsumedQuantity")
    if row.get("PricingQuantity") and not row.get("SkuPriceId"):
        problems.append(f"{where}: SkuPriceId null with a PricingQuantity")
    if not correction:
        for price in ("ListUnitPrice", "ContractedUnitPrice"):
            if not row.get(price):
                problems.append(f"{where}: {price} null on a usage row")
        if not problems:
            qty = Decimal(row["PricingQuantity"])
            for cost, price in (("ListCost", "ListUnitPrice"), ("ContractedCost", "ContractedUnitPrice")):
                expected = (qty * Decimal(row[price])).quantize(_CENT, rounding=ROUND_HALF_UP)
                if Decimal(row[cost]) != expected:
                    problems.append(f"{where}: {cost} {row[cost]} != {price} x PricingQuantity = {expected}")
    return problems


def _invoice_problems(frame: pl.DataFrame) -> list[str]:
    """InvoiceId over the file: all null (no invoice yet) or all set, one per billing account."""
    if "InvoiceId" not in frame.columns or frame.is_empty():
        return []
    invoice = frame["InvoiceId"].replace("", None)
    if 0 < invoice.null_count() < frame.height:
        return [
            f"InvoiceId null on {invoice.null_count()} of {frame.height} rows: a billing month has its invoice "
            "on every row or on none"
        ]
    per_account = frame.with_columns(invoice).group_by("BillingAccountId").agg(pl.col("InvoiceId").n_unique())
    return [f"BillingAccountId {a!r} has {n} InvoiceIds" for a, n in per_account.iter_rows() if n > 1]


def csv_problems(path: Path) -> list[str]:
    """Problems of a chargeback_focus.csv (read as text: the file's own spelling is checked)."""
    frame = pl.read_csv(path, infer_schema=False)
    problems = _order_problems(frame.columns) + _invoice_problems(frame)
    for index, row in enumerate(frame.iter_rows(named=True)):
        problems += _row_problems(index, row)
    return problems


def parquet_problems(path: Path) -> list[str]:
    """Types of a chargeback_focus.parquet: decimals, UTC timestamps, strings."""
    schema = pl.read_parquet_schema(path)
    problems = _order_problems(list(schema))
    for column in DECIMALS:
        if column in schema and not schema[column].is_decimal():
            problems.append(f"{column} is {schema[column]}, not a decimal")
    for column in DATETIMES:
        if schema.get(column) != pl.Datetime("us", "UTC"):
            problems.append(f"{column} is {schema.get(column)}, not a UTC timestamp")
    for column in MANDATORY + CONDITIONAL + RECOMMENDED:
        if column not in DECIMALS + DATETIMES and schema.get(column) != pl.String:
            problems.append(f"{column} is {schema.get(column)}, not a string")
    return problems
