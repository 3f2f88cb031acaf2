"""Exact money arithmetic for the chargeback transforms, in integers.

Internally quantities are integer micro-GPU-hours (1e-6 GPU-hours), prices integer micro
currency units per GPU-hour (1e-6), costs integer cents (1e-2). A quantity x a price is in
1e-12 currency units; ``CENT_DIVISOR`` turns it into cents. Rounding is half up (half away
from zero for negatives), done once per row; shares of a total are split by the largest
remainder so the parts add up to the total exactly. ``scaled_decimal`` turns the integers into
Polars decimals (DuckDB DECIMAL) at the mart boundary; ``to_scaled_int`` goes back.
"""

from __future__ import annotations

from decimal import Decimal

import polars as pl

MICRO = 10**6  # micro-GPU-hours per GPU-hour; micro-units per currency unit
CENT_DIVISOR = 10**10  # (micro-GPU-hours x micro-units per GPU-hour) per cent


def div_half_up(numerator: pl.Expr, denominator: int | pl.Expr) -> pl.Expr:
    """numerator / denominator rounded half away from zero; integers (denominator > 0)."""
    den = denominator if isinstance(denominator, pl.Expr) else pl.lit(denominator, pl.Int128)
    num = numerator.cast(pl.Int128)
    magnitude = (num.abs() * 2 + den) // (den * 2)
    return pl.when(num < 0).then(magnitude * -1).otherwise(magnitude)


def cost_cents(quantity_micro: pl.Expr, price_micro: pl.Expr) -> pl.Expr:
    """Cents of a quantity at a unit price, rounded half up (Int64)."""
    return div_half_up(quantity_micro.cast(pl.Int128) * price_micro.cast(pl.Int128), CENT_DIVISOR).cast(pl.Int64)


def largest_remainder(
    frame: pl.DataFrame, total: str, weight: str, over: list[str], order: list[str], out: str
) -> pl.DataFrame:
    """Split the integer column ``total`` (the same on every row of a group ``over``) over the
    group's rows by the integer ``weight`` (>= 0): floor shares, then one unit more to the rows
    with the largest remainders (ties by ``order``), so each group's ``out`` sums to its total
    exactly. A group whose weights sum to 0 puts everything on its first row by ``order``.
    Row order and the other columns are kept."""
    big_total, big_weight = pl.col(total).cast(pl.Int128), pl.col(weight).cast(pl.Int128)
    weights = big_weight.sum().over(over)
    exact = big_total * big_weight
    with_floor = frame.with_row_index("_row").with_columns(
        pl.when(weights > 0).then(exact // weights).otherwise(0).alias("_floor"),
        pl.when(weights > 0).then(exact % weights).otherwise(0).alias("_rem"),
        (weights > 0).alias("_weighted"),
    )
    ranked = with_floor.sort(
        [*over, "_rem", *order], descending=[False] * len(over) + [True] + [False] * len(order), nulls_last=True
    )
    ranked = ranked.with_columns(pl.int_range(1, pl.len() + 1).over(over).alias("_rank"))
    left = pl.col(total).cast(pl.Int128) - pl.col("_floor").sum().over(over)
    first = (
        ranked.sort([*over, *order], nulls_last=True)
        .with_columns((pl.int_range(pl.len()).over(over) == 0).alias("_first"))
        .select("_row", "_first")
    )
    ranked = ranked.join(first, on="_row")
    share = (
        pl.when(pl.col("_weighted"))
        .then(pl.col("_floor") + pl.when(pl.col("_rank") <= left).then(1).otherwise(0))
        .otherwise(pl.when(pl.col("_first")).then(pl.col(total)).otherwise(0))
    )
    return (
        ranked.with_columns(share.cast(pl.Int64).alias(out))
        .sort("_row")
        .drop("_row", "_floor", "_rem", "_weighted", "_rank", "_first")
    )


def scaled_decimal(value: pl.Expr, scale: int, precision: int = 18) -> pl.Expr:
    """An integer in units of 10^-scale as an exact decimal (12345, 2 -> 123.45)."""
    factor = 10**scale
    magnitude = value.cast(pl.Int128).abs()
    text = pl.concat_str(
        [
            pl.when(value < 0).then(pl.lit("-")).otherwise(pl.lit("")),
            (magnitude // factor).cast(pl.String),
            pl.lit("."),
            (magnitude % factor).cast(pl.String).str.zfill(scale),
        ]
    )
    return pl.when(value.is_null()).then(None).otherwise(text).cast(pl.Decimal(precision, scale))


def to_scaled_int(value: pl.Expr, scale: int) -> pl.Expr:
    """A decimal with at most ``scale`` decimals as an integer in units of 10^-scale."""
    return (value.cast(pl.Decimal(38, scale)) * 10**scale).cast(pl.Int64)


def micro(value: Decimal) -> int:
    """A configured Decimal price or multiplier in micro-units, half up (2.5 -> 2_500_000)."""
    return int((value * MICRO).to_integral_value(rounding="ROUND_HALF_UP"))


def float_micro(value: pl.Expr) -> pl.Expr:
    """A float quantity (GPU-hours) in micro-units, rounded half away from zero."""
    return (value * MICRO).round(0, mode="half_away_from_zero").cast(pl.Int64)
