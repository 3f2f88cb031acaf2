"""Prices: GPU-hours x the list price of one GPU-hour of the model in effect when they happened.

Prices come as segments (``SEGMENT_SCHEMA``: per model, ``[charge_period_start,
charge_period_end)`` at ``list_unit_price``), the chargeback's price frame. A row that holds
an interval (a job run's held interval in its month, an hour) is split over its model's
segments by the seconds they overlap, exactly as the chargeback cuts runs
(contracts/price_segments.py); a row of zero seconds takes the price at its start. List
prices only: partition and QOS multipliers are billing adjustments of the chargeback.

MIG slices ("A100 3g.40gb") are priced by their base model ("A100") unless the label has a
price of its own: their GPU-hours are already fractions of a GPU. A model without a price
gives a null cost (never 0), and the pages name such models so that the gap is visible.
"""

from __future__ import annotations

import polars as pl

from contracts.dated_cost import (  # noqa: F401  (the pages import them from here)
    EARLIEST,
    LATEST,
    SEGMENT_SCHEMA,
    base_model,
    price_key,
    undated_segments,
    unpriced_models,
    with_dated_cost,
    with_job_costs,
)


def with_hour_cost(hours: pl.DataFrame, segments: pl.DataFrame, hours_col: str, alias: str) -> pl.DataFrame:
    """Rows of one hour (``hour``) plus ``alias`` = ``hours_col`` x the price of that hour,
    seconds-weighted when the price changes inside it."""
    held = hours.with_columns(pl.col("hour").alias("_from"), (pl.col("hour") + pl.duration(hours=1)).alias("_to"))
    return with_dated_cost(held, segments, {alias: hours_col})
