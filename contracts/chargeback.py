"""The chargeback's public tables: marts.fct_chargeback_focus and marts.fct_chargeback_jobs.

Declared once here: the marts that build them (transforms/marts), the ledger that freezes them
(warehouse/books) and the export files (reports/focus_export.py) read these declarations.
docs/chargeback.md documents each column; tests check the migrations and the docs against them.
Decimals: quantities (GPU-hours) and unit prices to 6 places, money to cents.
"""

from __future__ import annotations

import polars as pl

QUANTITY = pl.Decimal(18, 6)
PRICE = pl.Decimal(18, 6)
MONEY = pl.Decimal(18, 2)

# marts.fct_chargeback_focus: billing_month, charge_month, cluster, then the FOCUS 1.2 columns,
# then ours (x_). The export drops the first three.
RATIO = pl.Decimal(9, 6)
TS = pl.Datetime("us")
S = pl.String()
FOCUS_COLUMNS: dict[str, pl.DataType] = {
    "BilledCost": MONEY,
    "BillingAccountId": S,
    "BillingAccountName": S,
    "BillingCurrency": S,
    "BillingPeriodEnd": TS,
    "BillingPeriodStart": TS,
    "ChargeCategory": S,
    "ChargeClass": S,
    "ChargeDescription": S,
    "ChargeFrequency": S,
    "ChargePeriodEnd": TS,
    "ChargePeriodStart": TS,
    "ConsumedQuantity": QUANTITY,
    "ConsumedUnit": S,
    "ContractedCost": MONEY,
    "ContractedUnitPrice": PRICE,
    "EffectiveCost": MONEY,
    "InvoiceId": S,
    "InvoiceIssuerName": S,
    "ListCost": MONEY,
    "ListUnitPrice": PRICE,
    "PricingCategory": S,
    "PricingQuantity": QUANTITY,
    "PricingUnit": S,
    "ProviderName": S,
    "PublisherName": S,
    "ResourceId": S,
    "ResourceName": S,
    "ResourceType": S,
    "ServiceCategory": S,
    "ServiceName": S,
    "ServiceSubcategory": S,
    "SkuId": S,
    "SkuMeter": S,
    "SkuPriceId": S,
    "SubAccountId": S,
    "SubAccountName": S,
    "Tags": S,
}
X_COLUMNS: dict[str, pl.DataType] = {
    "x_ActiveGpuHours": QUANTITY,
    "x_IdleGpuHours": QUANTITY,
    "x_Utilization": RATIO,
    "x_JobCount": pl.Int64(),
    "x_Division": S,
    "x_IdleShare": RATIO,
    "x_ChargeKind": S,
}
FOCUS_SCHEMA: dict[str, pl.DataType] = {
    "billing_month": pl.Date(),
    "charge_month": pl.Date(),
    "cluster": S,
    **FOCUS_COLUMNS,
    **X_COLUMNS,
}
UNIT = "GPU-Hours"
# FOCUS 1.2 has no GPU subcategory: cluster GPU-hours (and their idle capacity) are "Other (Compute)"
# (docs/chargeback.md, ServiceSubcategory).
SERVICE_CATEGORY, SERVICE_SUBCATEGORY = "Compute", "Other (Compute)"
FOCUS_ROW_KEY = [
    "cluster",
    "x_ChargeKind",
    "SubAccountId",
    "SkuId",
    "SkuPriceId",
    "ResourceId",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "Tags",
]
FOCUS_ORDER = ["charge_month", "ChargeClass", *FOCUS_ROW_KEY]  # the export's and the ledger's row order (nulls last)
FOCUS_MEASURES = {
    "PricingQuantity": 6,
    "ConsumedQuantity": 6,
    "BilledCost": 2,
    "ListCost": 2,
    "ContractedCost": 2,
    "EffectiveCost": 2,
    "x_ActiveGpuHours": 6,
    "x_IdleGpuHours": 6,
    "x_JobCount": 0,
}


# A job run as a charge line names it (transforms/marts/charge_lines.py and fct_chargeback_jobs).
LINE_RUN: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "job_id": pl.String(),
    "job_id_raw": pl.String(),
    "start_time": pl.Datetime("us"),
    "end_time": pl.Datetime("us"),
    "user_name": pl.String(),
    "account": pl.String(),
    "department": pl.String(),
    "division": pl.String(),
    "partition_name": pl.String(),
    "qos": pl.String(),
    "gpu_model": pl.String(),
}
# The price segment of the charge month a line is cut to: [start, end).
CHARGE_PERIOD: dict[str, pl.DataType] = {"charge_period_start": TS, "charge_period_end": TS}

# marts.fct_chargeback_jobs: one row per job run x price segment x charge month.
CORRECTION = "Correction"
JOBS_SCHEMA: dict[str, pl.DataType] = {
    "billing_month": pl.Date(),
    "charge_month": pl.Date(),
    "charge_class": pl.String(),
    **LINE_RUN,
    "gpus": QUANTITY,
    **CHARGE_PERIOD,
    "charge_seconds": pl.Int64(),
    "gpu_hours": QUANTITY,
    "active_gpu_hours": QUANTITY,
    "list_unit_price": PRICE,
    "price_multiplier": PRICE,
    "unit_price": PRICE,
    "cost": MONEY,
    "currency": pl.String(),
    "sku_price_id": pl.String(),
}
LINE_KEY = [
    "cluster",
    "job_id_raw",
    "start_time",
    "charge_period_start",
    "charge_period_end",
    "department",
    "division",
    "account",
    "partition_name",
    "qos",
    "gpu_model",
    "sku_price_id",
]
JOBS_ORDER = ["charge_month", "charge_class", *LINE_KEY]  # the export's and the ledger's line order (nulls last)
JOBS_MEASURES = {"charge_seconds": 0, "gpu_hours": 6, "active_gpu_hours": 6, "cost": 2}
