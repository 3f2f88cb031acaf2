"""marts.fct_chargeback_focus: the FinOps FOCUS 1.2 rows of a billing month (docs/chargeback.md).

One ``Usage`` row per cluster x department (SubAccount) x GPU model or MIG profile (SkuId) x
partition x QOS x charge period (the month, cut at the model's price changes), summing the
charge lines; plus the idle-capacity rows of ``int_charge_idle`` (the platform owner's, or
each department's share). Costs are cents summed from the lines, so a row's BilledCost =
round_half_up(PricingQuantity x ContractedUnitPrice, 2) and the per-job detail adds up to it.
List = contracted = effective = billed (the configured price is the only price).
Closed charge months get ``Correction`` rows (``focus_corrections``): ChargeClass
``Correction``, the billing period of the open month that books them, the charge period of
the month they belong to, unit prices null. InvoiceId is null on every row here: the
invoice of a billing month exists once it is closed, and ``cardhours close`` writes it on
the month's ledger rows (warehouse/books/ledger.py). Columns: ``billing_month``, ``charge_month``,
``cluster``, then FOCUS_COLUMNS, then X_COLUMNS (the export drops the first three).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime

import polars as pl

from contracts.capacity_states import IDLE
from contracts.chargeback import (
    FOCUS_COLUMNS,
    FOCUS_MEASURES,
    FOCUS_ORDER,
    FOCUS_ROW_KEY,
    FOCUS_SCHEMA,
    PRICE,
    RATIO,
    SERVICE_CATEGORY,
    SERVICE_SUBCATEGORY,
    UNIT,
    X_COLUMNS,
    S,
)
from transforms.helpers.charge_corrections import differences
from transforms.helpers.charge_money import div_half_up, scaled_decimal
from transforms.marts.charge_lines import ROW_GRAIN
from transforms.marts.charge_platform import CAPACITY_TITLES, CHARGE_KINDS
from transforms.marts.fct_chargeback_jobs import CORRECTION, sku_price_id

SCHEMA, ROW_KEY, ORDER, MEASURES = FOCUS_SCHEMA, FOCUS_ROW_KEY, FOCUS_ORDER, FOCUS_MEASURES
__all__ = ["FOCUS_COLUMNS", "X_COLUMNS", "SCHEMA", "ROW_KEY", "ORDER", "MEASURES", "UNIT"]


def month_bounds(month: date) -> tuple[datetime, datetime]:
    """[first day, first day of the next month) as naive UTC datetimes."""
    start = datetime(month.year, month.month, 1)
    return start, datetime(month.year + (month.month == 12), month.month % 12 + 1, 1)


def _usage(lines: pl.DataFrame) -> pl.DataFrame:
    """Charge lines summed per FOCUS row (integers)."""
    return (
        lines.group_by([*ROW_GRAIN, "is_priced"])
        .agg(
            pl.col("gpu_hours_micro").sum().alias("_qty"),
            pl.col("cost_cents").sum().alias("_cents"),
            pl.col("active_gpu_hours_micro").sum().alias("_active"),
            pl.col("measured_gpu_hours_micro").sum().alias("_measured"),
            pl.struct("job_id_raw", "start_time").n_unique().alias("x_JobCount"),
        )
        .with_columns(
            pl.lit("usage").alias("x_ChargeKind"),
            pl.when(pl.col("_measured") > 0).then(pl.col("_active")).alias("_active"),
            pl.when(pl.col("_measured") > 0).then(pl.col("_measured") - pl.col("_active")).alias("_idle"),
            pl.when(pl.col("_measured") > 0)
            .then(div_half_up(pl.col("_active").cast(pl.Int128) * 10**6, pl.col("_measured")))
            .alias("_util"),
            pl.lit(None, pl.Int64).alias("_share"),
            sku_price_id(
                pl.col("gpu_model"), pl.col("partition_name"), pl.col("qos"), pl.col("charge_period_start")
            ).alias("SkuPriceId"),
            pl.format("{}/{}/{}", "cluster", "partition_name", "gpu_model").alias("ResourceId"),
            pl.format("{} GPUs, partition {}, cluster {}", "gpu_model", "partition_name", "cluster").alias(
                "ResourceName"
            ),
            pl.format("{} GPU-hours, partition {}, QOS {}", "gpu_model", "partition_name", "qos").alias(
                "ChargeDescription"
            ),
            pl.struct(
                pl.col("cluster"),
                pl.col("department"),
                pl.col("division"),
                pl.col("partition_name").alias("partition"),
                pl.col("qos"),
            )
            .struct.json_encode()
            .alias("Tags"),
        )
    )


def _idle(idle: pl.DataFrame) -> pl.DataFrame:
    share = (
        pl.when(pl.col("department") == "(unallocated)")
        .then(pl.lit("platform owner"))
        .otherwise(pl.format("{} share", "idle_policy"))
    )
    is_idle = pl.col("capacity_state") == IDLE
    place = pl.when(is_idle).then(pl.lit("capacity")).otherwise(pl.col("capacity_state"))  # idle keeps its ids
    title = pl.col("capacity_state").replace_strict(CAPACITY_TITLES)
    return idle.with_columns(
        pl.col("gpu_hours_micro").alias("_qty"),
        pl.col("cost_cents").alias("_cents"),
        pl.lit(0, pl.Int64).alias("_active"),
        pl.col("gpu_hours_micro").alias("_idle"),
        pl.lit(0, pl.Int128).alias("_util"),
        (pl.col("idle_share") * 10**6).round(0).cast(pl.Int64).alias("_share"),
        pl.lit(0, pl.Int64).alias("x_JobCount"),
        pl.col("capacity_state").replace_strict(CHARGE_KINDS).alias("x_ChargeKind"),
        pl.col("unit_price_micro"),
        sku_price_id(pl.col("gpu_model"), place, pl.lit(""), pl.col("charge_period_start")).alias("SkuPriceId"),
        pl.format("{}/{}/{}", "cluster", place, "gpu_model").alias("ResourceId"),
        pl.format("{} GPU capacity, cluster {}", "gpu_model", "cluster").alias("ResourceName"),
        pl.format("{} {} GPU capacity ({})", title, "gpu_model", share).alias("ChargeDescription"),
        pl.struct("cluster", "department", "division", "idle_policy").struct.json_encode().alias("Tags"),
    )


def fct_chargeback_focus(
    lines: pl.DataFrame,
    idle: pl.DataFrame,
    month: date,
    identity: Mapping[str, str],
    department_names: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """FOCUS rows (SCHEMA) of ``month`` from int_charge_lines and int_charge_idle rows.
    ``identity``: currency, billing_account_id/_name, invoice_issuer_name, provider_name,
    publisher_name, service_name. InvoiceId stays null: `cardhours close` sets it on the ledger rows."""
    start, end = month_bounds(month)
    rows = pl.concat([_usage(lines), _idle(idle)], how="diagonal_relaxed")
    names = department_names or {}
    price = scaled_decimal(pl.col("unit_price_micro"), 6)
    cost = scaled_decimal(pl.col("_cents"), 2)
    rows = rows.with_columns(
        pl.lit(month).alias("billing_month"),
        pl.lit(month).alias("charge_month"),
        cost.alias("BilledCost"),
        cost.alias("ContractedCost"),
        cost.alias("EffectiveCost"),
        cost.alias("ListCost"),
        pl.lit(identity["billing_account_id"]).alias("BillingAccountId"),
        pl.lit(identity["billing_account_name"]).alias("BillingAccountName"),
        pl.lit(identity["currency"]).alias("BillingCurrency"),
        pl.lit(end).alias("BillingPeriodEnd"),
        pl.lit(start).alias("BillingPeriodStart"),
        pl.lit("Usage").alias("ChargeCategory"),
        pl.lit(None, S).alias("ChargeClass"),
        pl.lit("Usage-Based").alias("ChargeFrequency"),
        pl.col("charge_period_end").alias("ChargePeriodEnd"),
        pl.col("charge_period_start").alias("ChargePeriodStart"),
        scaled_decimal(pl.col("_qty"), 6).alias("ConsumedQuantity"),
        pl.lit(UNIT).alias("ConsumedUnit"),
        price.alias("ContractedUnitPrice"),
        price.alias("ListUnitPrice"),
        pl.lit(None, S).alias("InvoiceId"),
        pl.lit(identity["invoice_issuer_name"]).alias("InvoiceIssuerName"),
        pl.lit("Standard").alias("PricingCategory"),
        scaled_decimal(pl.col("_qty"), 6).alias("PricingQuantity"),
        pl.lit(UNIT).alias("PricingUnit"),
        pl.lit(identity["provider_name"]).alias("ProviderName"),
        pl.lit(identity["publisher_name"]).alias("PublisherName"),
        pl.when(pl.col("gpu_model").str.contains(" "))
        .then(pl.lit("MIG GPU instance"))
        .otherwise(pl.lit("GPU"))
        .alias("ResourceType"),
        pl.lit(SERVICE_CATEGORY).alias("ServiceCategory"),
        pl.lit(identity["service_name"]).alias("ServiceName"),
        pl.lit(SERVICE_SUBCATEGORY).alias("ServiceSubcategory"),
        pl.col("gpu_model").fill_null("unknown").alias("SkuId"),
        pl.lit("GPU Hours").alias("SkuMeter"),
        pl.col("department").alias("SubAccountId"),
        pl.col("department")
        .replace_strict(names, default=pl.col("department"), return_dtype=S)
        .alias("SubAccountName"),
        scaled_decimal(pl.col("_active"), 6).alias("x_ActiveGpuHours"),
        scaled_decimal(pl.col("_idle"), 6).alias("x_IdleGpuHours"),
        scaled_decimal(pl.col("_util"), 6, 9).alias("x_Utilization"),
        pl.col("division").alias("x_Division"),
        scaled_decimal(pl.col("_share"), 6, 9).alias("x_IdleShare"),
    )
    return rows.select(pl.col(n).cast(t) for n, t in SCHEMA.items()).sort(ROW_KEY, nulls_last=True)


def focus_corrections(current: pl.DataFrame, booked: pl.DataFrame, billing_month: date) -> pl.DataFrame:
    """Correction rows (SCHEMA) booked in ``billing_month`` for a closed charge month:
    current - booked per row key (``booked``: all ledger rows of that charge month). They
    belong to the open billing month's invoice, not to the one of the booked rows: InvoiceId null."""
    start, end = month_bounds(billing_month)
    rows = differences(current, booked, ROW_KEY, MEASURES)
    return (
        rows.with_columns(
            pl.lit(billing_month).alias("billing_month"),
            pl.lit(start).alias("BillingPeriodStart"),
            pl.lit(end).alias("BillingPeriodEnd"),
            pl.lit(CORRECTION).alias("ChargeClass"),
            pl.lit(None, S).alias("InvoiceId"),
            ("Correction: " + pl.col("ChargeDescription")).alias("ChargeDescription"),
            pl.lit(None, PRICE).alias("ListUnitPrice"),
            pl.lit(None, PRICE).alias("ContractedUnitPrice"),
            pl.lit(None, RATIO).alias("x_Utilization"),
            pl.lit(None, RATIO).alias("x_IdleShare"),
        )
        .select(pl.col(n).cast(t) for n, t in SCHEMA.items())
        .sort(ROW_KEY, nulls_last=True)
    )
