"""The price of a job's idle GPU-hours: ``idle_gpu_hours`` x the GPU-hour rate of its model.

MIG runs carry models like ``"A100 3g.40gb"``: they are priced at the base model's rate
(their ``gpu_hours`` are already fractional). A run on hosts of several models (``"A100,H100"``)
or of a model without a rate gets a null cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import polars as pl

MIG_SUFFIX = r"\s+([1-7]g\.[0-9]+gb(?:\+me)?)$"  # group 1: the profile


def base_gpu_model(column: str = "gpu_model") -> pl.Expr:
    """The model without a trailing MIG profile ("A100 3g.40gb" -> "A100")."""
    return pl.col(column).str.replace(MIG_SUFFIX, "")


def base_models(models: Iterable[str | None]) -> list[str]:
    """The distinct base models to price (for building ``prices``)."""
    frame = pl.DataFrame({"gpu_model": list(models)}, schema={"gpu_model": pl.String()})
    return sorted(frame.select(base_gpu_model()).drop_nulls().unique().to_series().to_list())


def with_idle_cost(frame: pl.DataFrame, prices: Mapping[str, float], currency: str) -> pl.DataFrame:
    """``frame`` plus ``idle_cost`` (null without a rate or idle hours) and ``currency``."""
    rates = pl.DataFrame(
        {"_base_model": list(prices), "_rate": [float(v) for v in prices.values()]},
        schema={"_base_model": pl.String(), "_rate": pl.Float64()},
    )
    return (
        frame.with_columns(_base_model=base_gpu_model())
        .join(rates, on="_base_model", how="left", maintain_order="left")
        .with_columns(idle_cost=pl.col("idle_gpu_hours") * pl.col("_rate"), currency=pl.lit(currency))
        .drop("_base_model", "_rate")
    )
