"""The price of a job's idle GPU-hours: ``idle_gpu_hours`` x the list price of its model in
effect over its held interval (``contracts.dated_cost``: split at price changes by seconds,
as the chargeback cuts runs).

MIG runs carry models like ``"A100 3g.40gb"``: they are priced at the base model's price
(their ``gpu_hours`` are already fractional). A run on hosts of several models (``"A100,H100"``)
or of a model without a price gets a null cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime

import polars as pl

from contracts.dated_cost import undated_segments, with_dated_cost
from contracts.price_segments import held_interval


def with_idle_cost(
    frame: pl.DataFrame, prices: pl.DataFrame | Mapping[str, float], currency: str, month: date
) -> pl.DataFrame:
    """``frame`` (runs of ``month`` as fct_job_usage has them) plus ``idle_cost`` (null without
    a price) and ``currency``. ``prices``: price segments (``dated_cost.SEGMENT_SCHEMA``, e.g.
    ``config.rates.price_frame``), or one price per model for all time."""
    segments = prices if isinstance(prices, pl.DataFrame) else undated_segments(prices)
    segments = segments.with_columns(pl.col("list_unit_price").cast(pl.Float64))
    priced = with_dated_cost(
        held_interval(frame, datetime.combine(month, datetime.min.time())), segments, {"idle_cost": "idle_gpu_hours"}
    )
    return priced.with_columns(currency=pl.lit(currency))
