"""marts.fct_chargeback_jobs: the per-job detail behind the FOCUS rows (decimals).

One row per job run x price segment of a charge month, booked in a billing month. Regular
lines: billing month = charge month, ``charge_class`` null. When the charge month is already
closed, the lines computed now are compared with the lines booked in the ledger, and only the
differences are written, as ``Correction`` lines in the next open billing month
(``job_corrections``). A line's ``sku_price_id`` is the ``SkuPriceId`` of its FOCUS row.
"""

from __future__ import annotations

from datetime import date

import polars as pl

from contracts.chargeback import CORRECTION, JOBS_MEASURES, JOBS_ORDER, JOBS_SCHEMA, LINE_KEY
from transforms.helpers.charge_corrections import differences
from transforms.helpers.charge_money import float_micro, scaled_decimal

SCHEMA, ORDER, MEASURES = JOBS_SCHEMA, JOBS_ORDER, JOBS_MEASURES
__all__ = ["CORRECTION", "LINE_KEY", "SCHEMA", "ORDER", "MEASURES"]


def sku_price_id(gpu_model: pl.Expr, partition: pl.Expr, qos: pl.Expr, period_start: pl.Expr) -> pl.Expr:
    """``"H100|gpu|normal|2026-10-15T12:00:00Z"``: the model's price in a partition and QOS
    from the segment's start (the FOCUS SkuPriceId of the charge row)."""
    return pl.concat_str(
        [
            gpu_model.fill_null("unknown"),
            partition.fill_null(""),
            qos.fill_null(""),
            period_start.dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
        ],
        separator="|",
    )


def fct_chargeback_jobs(lines: pl.DataFrame, month: date, currency: str) -> pl.DataFrame:
    """Regular detail lines (SCHEMA) of ``month`` from int_charge_lines rows."""
    return lines.with_columns(
        pl.lit(month).alias("billing_month"),
        pl.lit(month).alias("charge_month"),
        pl.lit(None, pl.String).alias("charge_class"),
        scaled_decimal(float_micro(pl.col("gpus")), 6).alias("gpus"),
        scaled_decimal(pl.col("gpu_hours_micro"), 6).alias("gpu_hours"),
        scaled_decimal(pl.col("active_gpu_hours_micro"), 6).alias("active_gpu_hours"),
        scaled_decimal(pl.col("list_unit_price_micro"), 6).alias("list_unit_price"),
        scaled_decimal(pl.col("price_multiplier_micro"), 6).alias("price_multiplier"),
        scaled_decimal(pl.col("unit_price_micro"), 6).alias("unit_price"),
        scaled_decimal(pl.col("cost_cents"), 2).alias("cost"),
        pl.lit(currency).alias("currency"),
        sku_price_id(pl.col("gpu_model"), pl.col("partition_name"), pl.col("qos"), pl.col("charge_period_start")).alias(
            "sku_price_id"
        ),
    ).select(pl.col(n).cast(t) for n, t in SCHEMA.items())


def job_corrections(current: pl.DataFrame, booked: pl.DataFrame, billing_month: date) -> pl.DataFrame:
    """Correction lines (SCHEMA) booked in ``billing_month``: current - booked per line key.
    ``current``: this function's module's regular lines of the closed month, computed now;
    ``booked``: the ledger's lines of that charge month (all billing months)."""
    rows = differences(
        current.drop("billing_month", "charge_class"), booked.drop("billing_month", "charge_class"), LINE_KEY, MEASURES
    )
    return (
        rows.with_columns(pl.lit(billing_month).alias("billing_month"), pl.lit(CORRECTION).alias("charge_class"))
        .select(pl.col(n).cast(t) for n, t in SCHEMA.items())
        .sort(LINE_KEY, nulls_last=True)
    )
