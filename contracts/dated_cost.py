"""GPU-hours x the list price of one GPU-hour of the model in effect when they happened.

Prices come as segments (``SEGMENT_SCHEMA``: per model, ``[charge_period_start,
charge_period_end)`` at ``list_unit_price``), the chargeback's price frame. A row that holds
an interval (a job run's held interval in its month, an hour) is split over its model's
segments by the seconds they overlap, exactly as the chargeback cuts runs
(``price_segments``); a row of zero seconds takes the price at its start. List prices only:
partition and QOS multipliers are billing adjustments of the chargeback.

MIG slices ("A100 3g.40gb") are priced by their base model ("A100") unless the label has a
price of its own: their GPU-hours are already fractions of a GPU. A model without a price
gives a null cost (never 0). Used by the review marts (``flag_rules.costs``) and the pages
(``reports.costs``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime

import polars as pl

from contracts.price_segments import MIG_SUFFIX, held_interval, over_segments

_MIG_SUFFIX = re.compile(MIG_SUFFIX)
EARLIEST, LATEST = datetime(1, 1, 1), datetime(9999, 1, 1)
SEGMENT_SCHEMA = {
    "gpu_model": pl.String,
    "charge_period_start": pl.Datetime("us"),
    "charge_period_end": pl.Datetime("us"),
    "list_unit_price": pl.Float64,
}


def base_model(gpu_model: str) -> str:
    """``"A100 3g.40gb"`` -> ``"A100"``; a whole-GPU model is returned as it is."""
    return _MIG_SUFFIX.sub("", gpu_model)


def undated_segments(prices: Mapping[str, float]) -> pl.DataFrame:
    """One segment for all time per model: a price without changes."""
    rows = [(model, EARLIEST, LATEST, float(price)) for model, price in sorted(prices.items())]
    return pl.DataFrame(rows, schema=SEGMENT_SCHEMA, orient="row")


def price_key(gpu_model: str | None, priced: Iterable[str]) -> str | None:
    """The model whose segments price ``gpu_model``: its own, else its base model's."""
    if gpu_model is None or gpu_model in priced:
        return gpu_model
    return base_model(gpu_model)


def unpriced_models(models: Iterable[str | None], segments: pl.DataFrame) -> list[str]:
    priced = set(segments["gpu_model"])
    return sorted({m for m in models if m is not None and price_key(m, priced) not in priced})


def _keyed(frame: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    priced = set(segments["gpu_model"])
    models = frame["gpu_model"].unique().to_list()
    keys = pl.DataFrame(
        {"gpu_model": models, "_key": [price_key(m, priced) for m in models]},
        schema={"gpu_model": pl.String, "_key": pl.String},
    )
    return frame.join(keys, on="gpu_model", how="left", nulls_equal=True, maintain_order="left")


def _weights(parts: pl.DataFrame) -> pl.DataFrame:
    """Each part's share of its row: overlap seconds / the row's seconds; a row of zero
    seconds lies wholly in the segment holding its start."""
    overlap = pl.col("charge_seconds").clip(lower_bound=0)
    total = overlap.sum().over("_row")
    holds_start = (pl.col("charge_period_start") <= pl.col("_from")) & (pl.col("_from") < pl.col("charge_period_end"))
    weight = pl.when(total > 0).then(overlap / total).otherwise(holds_start.cast(pl.Float64))
    parts = parts.with_columns(weight.alias("_weight"))
    return parts.filter((pl.col("_weight") > 0) | pl.col("list_unit_price").is_null())


def with_dated_cost(frame: pl.DataFrame, segments: pl.DataFrame, costs: Mapping[str, str]) -> pl.DataFrame:
    """``frame`` (rows holding ``[_from, _to)``) plus, per ``alias: hours column`` of
    ``costs``, the hours x the list price in effect over the interval (null without a price)."""
    rows = _keyed(frame, segments).with_row_index("_row")
    hours = sorted(set(costs.values()))
    slim = rows.select("_row", "_from", "_to", "_key", *hours)
    parts = _weights(over_segments(slim, segments, pl.col("_key"), EARLIEST, LATEST))
    priced = pl.col("list_unit_price").is_not_null().all()
    totals = parts.group_by("_row").agg(
        pl.when(priced).then((pl.col(h) * pl.col("_weight") * pl.col("list_unit_price")).sum()).alias(alias)
        for alias, h in costs.items()
    )
    return rows.join(totals, on="_row", how="left").sort("_row").drop("_row", "_key", "_from", "_to")


def with_job_costs(jobs: pl.DataFrame, segments: pl.DataFrame, month: date | pl.Expr) -> pl.DataFrame:
    """Job runs of fct_job_usage (of ``month``: a date, or an expression of each row's month)
    plus ``cost`` (GPU-hours) and ``idle_cost``, over the run's held interval in the month as
    the chargeback cuts it."""
    month_start = (pl.lit(month) if isinstance(month, date) else month).cast(pl.Datetime("us"))
    costs = {"cost": "gpu_hours", "idle_cost": "idle_gpu_hours"}
    return with_dated_cost(held_interval(jobs, month_start), segments, costs)
