"""intermediate.int_gpu_inventory_observed: the GPUs and MIG instances DCGM reported, per hour.

One row per cluster, host, GPU (or MIG instance) and hour in which the hourly rollup
(``staging.stg_dcgm__gpu_hourly``) has samples of it. ``hourly_inventory`` turns the config's
inventory into the inventory of each hour of a period, card by card (a card: cluster, host, GPU):

- a card observed in an hour with the layout the config declares keeps the config's rows;
- a card observed with another layout (MIG instances on a GPU declared whole, another MIG
  layout, whole where MIG is declared) counts as what was observed in that hour: whole
  (fraction 1) or its observed instances (each ``mig_weight(profile)``). When an hour has
  both whole and MIG samples of one card, the MIG instances count, never both;
- a card not observed in an hour keeps the config's rows (a stopped exporter does not
  erase capacity), and a GPU observed on a declared host beyond the declared ones is added;
- what cannot be observed (gpu_model, NVLink domain, switch group) comes from the host's
  declared GPUs; a host the config does not declare adds nothing (``inventory_differences``
  lists it).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import polars as pl

CARD = ["cluster", "hostname", "gpu"]

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "uuid": pl.String(),
    "model_name": pl.String(),
    "gpu_i_id": pl.Int16(),
    "gpu_i_profile": pl.String(),
    "hour": pl.Datetime("us"),
    "n_samples": pl.Int64(),
}

DIFFERENCE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "declared": pl.String(),
    "observed": pl.String(),
    "hours": pl.Int64(),
    "first_hour": pl.Datetime("us"),
    "last_hour": pl.Datetime("us"),
}

WHOLE = "whole"
NOT_DECLARED = "not declared"


def int_gpu_inventory_observed(hourly: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
    """Rows in SCHEMA from stg_dcgm__gpu_hourly rows (any columns beyond its key are ignored)."""
    keys = [name for name in SCHEMA if name != "n_samples"]
    return (
        hourly.lazy()
        .group_by(keys)
        .agg(pl.col("n_samples").sum())
        .filter(pl.col("n_samples") > 0)
        .select(list(SCHEMA))
        .cast(SCHEMA)
        .sort(*CARD, "hour", "gpu_i_id", nulls_last=False)
        .collect()
    )


def _layout(frame: pl.DataFrame | pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    """Per ``by`` group: its layout, the sorted MIG profiles joined by "+", or ``WHOLE``."""
    return (
        frame.lazy()
        .group_by(by)
        .agg(
            pl.col("gpu_i_profile").drop_nulls().sort().str.join("+").alias("_layout"),
        )
        .with_columns(pl.when(pl.col("_layout") == "").then(pl.lit(WHOLE)).otherwise("_layout").alias("_layout"))
    )


def _observed_cards(observed: pl.DataFrame) -> pl.DataFrame:
    """Observed rows with whole-GPU rows dropped where the card also had MIG rows that hour."""
    has_mig = pl.col("gpu_i_profile").is_not_null().any().over(*CARD, "hour")
    return observed.filter(pl.col("gpu_i_profile").is_not_null() | ~has_mig)


def hourly_inventory(
    declared: pl.DataFrame,
    observed: pl.DataFrame,
    period_start: datetime,
    period_end: datetime,
    mig_weight: Callable[[str], float],
) -> pl.DataFrame:
    """``declared`` (config/frames.py INVENTORY_SCHEMA) x each hour of [period_start, period_end),
    with the cards observed otherwise replaced by their observation (module docstring): rows
    in INVENTORY_SCHEMA + ``hour``."""
    hours = pl.datetime_range(period_start, period_end, "1h", closed="left", eager=True).alias("hour").to_frame()
    hours = hours.with_columns(pl.col("hour").cast(pl.Datetime("us")))
    seen = _observed_cards(observed.filter(pl.col("hour").is_between(period_start, period_end, closed="left")))
    seen = seen.join(declared.select("cluster", "hostname").unique(), on=["cluster", "hostname"], how="semi")
    declared_layout = _layout(declared, CARD).collect()
    changed = (
        _layout(seen, [*CARD, "hour"])
        .join(declared_layout.lazy(), on=CARD, how="left", suffix="_declared")
        .filter(pl.col("_layout") != pl.col("_layout_declared").fill_null(""))
        .select(*CARD, "hour")
        .collect()
    )
    kept = declared.join(hours, how="cross").join(changed, on=[*CARD, "hour"], how="anti")
    if changed.is_empty():
        return kept
    host = declared.group_by("cluster", "hostname", maintain_order=True).agg(
        pl.col("gpu_model", "nvlink_domain", "switch_group").first(), pl.col("memory_mib").max().alias("_memory")
    )
    replaced = seen.join(changed, on=[*CARD, "hour"], how="semi").join(host, on=["cluster", "hostname"])
    profiles = replaced.get_column("gpu_i_profile").drop_nulls().unique().to_list()
    weights = {profile: mig_weight(profile) for profile in profiles}
    memory = pl.col("_memory")
    profile_gb = pl.col("gpu_i_profile").str.extract(r"\.(\d+)gb", 1).cast(pl.Int64)
    replaced = replaced.with_columns(
        gpu_fraction=pl.col("gpu_i_profile").replace_strict(weights, default=1.0, return_dtype=pl.Float64),
        memory_mib=pl.when(pl.col("gpu_i_profile").is_null())
        .then(memory)
        .otherwise(pl.min_horizontal(profile_gb * 1024, memory).fill_null(memory)),
    )
    columns = list(kept.columns)
    return pl.concat([kept, replaced.select(columns).cast(kept.schema)]).sort(
        "cluster", "hostname", "gpu", "hour", "gpu_i_id", nulls_last=False
    )


def inventory_differences(declared: pl.DataFrame, observed: pl.DataFrame) -> pl.DataFrame:
    """Per card and (declared, observed) layout pair that differ: the hours affected (DIFFERENCE_SCHEMA).
    A card observed but not declared has ``declared`` = ``NOT_DECLARED``."""
    declared_layout = _layout(declared, CARD)
    return (
        _layout(_observed_cards(observed), [*CARD, "hour"])
        .join(declared_layout, on=CARD, how="left", suffix="_declared")
        .with_columns(pl.col("_layout_declared").fill_null(pl.lit(NOT_DECLARED)))
        .filter(pl.col("_layout") != pl.col("_layout_declared"))
        .group_by(*CARD, pl.col("_layout_declared").alias("declared"), pl.col("_layout").alias("observed"))
        .agg(pl.len().alias("hours"), pl.col("hour").min().alias("first_hour"), pl.col("hour").max().alias("last_hour"))
        .select(list(DIFFERENCE_SCHEMA))
        .cast(DIFFERENCE_SCHEMA)
        .sort(*CARD, "first_hour")
        .collect()
    )


def difference_advice(row: dict) -> str:
    """A plain-language line on what to change in the config for one ``inventory_differences`` row."""
    where = f"{row['cluster']} {row['hostname']} GPU {row['gpu']}"
    if row["declared"] == NOT_DECLARED:
        return f"{where} reported samples but is not in [[clusters.inventory.node_groups]]: add it to a node group."
    if row["observed"] == WHOLE:
        return f"{where} ran whole but is declared as MIG {row['declared']}: remove its mig_layout."
    return (
        f"{where} ran as MIG {row['observed']} but is declared as {row['declared']}: "
        f"set mig_layout = {row['observed'].split('+')} on its node group (or split the group)."
    )
