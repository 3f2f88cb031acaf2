"""Cutting intervals at a GPU model's price changes, exact to the second.

The shared part of the chargeback's pricing (transforms/marts/charge_lines.py) and the
review's (reports/costs.py). ``prices`` has one row per model and price segment:
``gpu_model``, ``charge_period_start``, ``charge_period_end`` (exclusive),
``list_unit_price`` (any type: decimal text in the chargeback, a float in the review), as
``config.rates.price_frame`` builds it.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

MIG_SUFFIX = r"\s+([1-7]g\.[0-9]+gb(?:\+me)?)$"  # " 3g.40gb", " 1g.10gb+me" ending a label; group 1: the profile


def base_model(gpu_model: pl.Expr) -> pl.Expr:
    """The chargeback's price key of a GPU model label, the label less a trailing MIG profile:
    ``"A100 3g.40gb"`` -> ``"A100"``; a model named with spaces (``"RTX 6000 Ada"``) stays whole."""
    return gpu_model.str.replace(MIG_SUFFIX, "")


def _lit(value: datetime | pl.Expr) -> pl.Expr:
    return pl.lit(value) if isinstance(value, datetime) else value


def held_interval(runs: pl.DataFrame, period_start: datetime | pl.Expr) -> pl.DataFrame:
    """A run's held interval in its period: ``_from`` = max(start_time, period start),
    ``_to`` = ``_from`` + ``elapsed_seconds`` (fct_job_usage clips both to the period)."""
    held_from = pl.max_horizontal(pl.col("start_time"), _lit(period_start))
    return runs.with_columns(held_from.alias("_from")).with_columns(
        (pl.col("_from") + pl.duration(seconds=pl.col("elapsed_seconds"))).alias("_to"),
    )


def over_segments(
    rows: pl.DataFrame,
    prices: pl.DataFrame,
    key: pl.Expr,
    period_start: datetime | pl.Expr,
    period_end: datetime | pl.Expr,
) -> pl.DataFrame:
    """Rows holding ``[_from, _to)`` x every price segment of their model (``key``, kept as
    ``_model``), with ``charge_seconds`` = the seconds they overlap (<= 0 for a segment the
    row does not touch). A row whose model has no price keeps one segment
    ``[period_start, period_end)`` with its whole seconds and a null ``list_unit_price``."""
    rows = rows.with_columns(key.alias("_model"))
    priced = rows.join(prices.rename({"gpu_model": "_model"}), on="_model", how="left")
    overlap = (
        pl.min_horizontal("_to", "charge_period_end") - pl.max_horizontal("_from", "charge_period_start")
    ).dt.total_seconds()
    whole = (pl.col("_to") - pl.col("_from")).dt.total_seconds()
    return priced.with_columns(
        pl.when(pl.col("list_unit_price").is_null()).then(whole).otherwise(overlap).alias("charge_seconds"),
        pl.col("charge_period_start").fill_null(_lit(period_start)),
        pl.col("charge_period_end").fill_null(_lit(period_end)),
    )
