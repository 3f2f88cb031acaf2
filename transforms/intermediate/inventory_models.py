"""GPU models DCGM reported that differ from the config's: per card, the hours it reported another
``modelName`` than its node group's ``model_name`` (rows in ``DIFFERENCE_SCHEMA``).

A model does not change capacity (a card is one GPU whatever its model), but it decides the price
(``gpu_model`` -> ``[rates.gpu_hour]``), and a DCGM model name cannot be turned into a price key
safely. So a card that reports another model keeps its node group's price, and the difference is
listed, with the hours it affects, for the operator to correct the node group.
"""

from __future__ import annotations

import polars as pl

from contracts.sources import OBSERVED_BY_DCGM
from transforms.intermediate.int_gpu_inventory_observed import CARD, DIFFERENCE_SCHEMA

MODEL_DIFFERENCE = "model"
# Per card and reported model in a period: hours, first and last (warehouse/books/inventory.py MODELS_SQL).
MODEL_HOURS_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "model_name": pl.String(),
    "hours": pl.Int64(),
    "first_hour": pl.Datetime("us"),
    "last_hour": pl.Datetime("us"),
}


def model_hours(observed: pl.DataFrame) -> pl.DataFrame:
    """``MODEL_HOURS_SCHEMA`` from ``int_gpu_inventory_observed`` rows (DCGM's only: others carry no model)."""
    named = observed.filter(pl.col("model_name").is_not_null() & (pl.col("source") == OBSERVED_BY_DCGM))
    return (
        named.group_by(*CARD, "model_name")
        .agg(
            pl.col("hour").n_unique().alias("hours"),
            pl.col("hour").min().alias("first_hour"),
            pl.col("hour").max().alias("last_hour"),
        )
        .select(list(MODEL_HOURS_SCHEMA))
        .cast(MODEL_HOURS_SCHEMA)
    )


def _same(declared: pl.Expr, observed: pl.Expr) -> pl.Expr:
    return declared.str.strip_chars().str.to_lowercase() == observed.str.strip_chars().str.to_lowercase()


def model_differences(declared: pl.DataFrame, hours: pl.DataFrame) -> pl.DataFrame:
    """Rows in ``DIFFERENCE_SCHEMA`` (``what`` = ``MODEL_DIFFERENCE``): per declared card and model it
    reported other than its declared ``model_name`` (case and spaces aside). ``declared``: the
    config's inventory (config/frames.py); ``hours``: ``MODEL_HOURS_SCHEMA`` rows. Cards the config
    does not declare are listed by ``inventory_differences``."""
    models = declared.select(*CARD, pl.col("model_name").alias("declared")).unique(CARD)
    joined = hours.join(models, on=CARD).filter(~_same(pl.col("declared"), pl.col("model_name")))
    return (
        joined.with_columns(
            what=pl.lit(MODEL_DIFFERENCE), observed=pl.col("model_name"), observed_by=pl.lit(OBSERVED_BY_DCGM)
        )
        .select(list(DIFFERENCE_SCHEMA))
        .cast(DIFFERENCE_SCHEMA)
        .sort(*CARD, "first_hour")
    )
