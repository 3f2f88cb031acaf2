"""Prices: GPU-hours x the price of one GPU-hour of the model.

MIG slices ("A100 3g.40gb") are priced by their base model ("A100"): their GPU-hours are
already fractions of a GPU. A model without a price gives a null cost (never 0), and the
pages name such models so that the gap is visible.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import polars as pl

_MIG_SUFFIX = re.compile(r"\s+\d+g\.\d+gb(\+\w+)?$")


def base_model(gpu_model: str) -> str:
    """``"A100 3g.40gb"`` -> ``"A100"``; a whole-GPU model is returned as it is."""
    return _MIG_SUFFIX.sub("", gpu_model)


def price_of(gpu_model: str | None, prices: Mapping[str, float]) -> float | None:
    """The price of one GPU-hour: the model's own, else its base model's, else None."""
    if gpu_model is None:
        return None
    if gpu_model in prices:
        return prices[gpu_model]
    return prices.get(base_model(gpu_model))


def with_cost(frame: pl.DataFrame, prices: Mapping[str, float], hours: str, alias: str) -> pl.DataFrame:
    """Add ``alias`` = ``hours`` x the price of the row's ``gpu_model``."""
    models = frame["gpu_model"].unique().to_list() if not frame.is_empty() else []
    table = pl.DataFrame(
        {"gpu_model": models, "_price": [price_of(m, prices) for m in models]},
        schema={"gpu_model": pl.String, "_price": pl.Float64},
    )
    return (
        frame.join(table, on="gpu_model", how="left", nulls_equal=True)
        .with_columns((pl.col(hours) * pl.col("_price")).alias(alias))
        .drop("_price")
    )


def unpriced_models(models: Iterable[str | None], prices: Mapping[str, float]) -> list[str]:
    return sorted({m for m in models if m is not None and price_of(m, prices) is None})


def cost_sum(frame: pl.DataFrame, prices: Mapping[str, float], hours: str) -> float:
    """Total cost of ``hours`` over the rows whose model has a price (see ``unpriced_hours``)."""
    return float(with_cost(frame, prices, hours, "_cost")["_cost"].fill_null(0).sum())


def unpriced_hours(frame: pl.DataFrame, prices: Mapping[str, float], hours: str) -> float:
    """The ``hours`` on rows whose model has no price (left out of ``cost_sum``)."""
    priced = with_cost(frame, prices, hours, "_cost")
    return float(priced.filter(pl.col("_cost").is_null())[hours].fill_null(0).sum())
