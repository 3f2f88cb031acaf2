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
  erase capacity), as does a card declared MIG whose observed instances are some of the
  declared ones; a GPU observed on a declared host beyond the declared ones is added;
- what cannot be observed (gpu_model, NVLink domain, switch group) comes from the host's
  declared GPUs; a host the config does not declare adds nothing (``inventory_differences``
  lists it).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import polars as pl

from contracts.sources import OBSERVED_BY_DCGM, OBSERVED_BY_KUBE, OBSERVED_BY_SLURM

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
    "n_samples": pl.Int64(),  # DCGM samples of the instance in the hour (null: a kube row)
    "source": pl.String(),  # contracts/sources.py OBSERVED_BY_* (node counts placed on cards: inventory_counts.py)
}

DIFFERENCE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "what": pl.String(),  # LAYOUT_DIFFERENCE or MODEL_DIFFERENCE (inventory_models.py)
    "declared": pl.String(),
    "observed": pl.String(),
    "observed_by": pl.String(),
    "hours": pl.Int64(),
    "first_hour": pl.Datetime("us"),
    "last_hour": pl.Datetime("us"),
}

WHOLE = "whole"
NOT_DECLARED = "not declared"
LAYOUT_DIFFERENCE = "layout"
DCGM_KEY = [name for name in SCHEMA if name not in ("n_samples", "source")]
_KEY = ", ".join(DCGM_KEY)
# The same rows as ``int_gpu_inventory_observed``, summed inside DuckDB from the month's days of
# staging.stg_dcgm__gpu_hourly; parameters: OBSERVED_BY_DCGM, first day, day after the last, period start, end.
OBSERVED_SQL = (
    f"SELECT {_KEY}, sum(n_samples)::BIGINT AS n_samples, CAST(? AS VARCHAR) AS source "
    "FROM staging.stg_dcgm__gpu_hourly "
    "WHERE day >= ? AND day < ? AND hour >= ? AND hour < ? GROUP BY ALL HAVING sum(n_samples) > 0 "
    "ORDER BY cluster, hostname, gpu, hour, gpu_i_id NULLS FIRST"
)


def int_gpu_inventory_observed(hourly: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
    """Rows in SCHEMA from stg_dcgm__gpu_hourly rows (any columns beyond its key are ignored)."""
    return (
        hourly.lazy()
        .group_by(DCGM_KEY)
        .agg(pl.col("n_samples").sum())
        .filter(pl.col("n_samples") > 0)
        .with_columns(source=pl.lit(OBSERVED_BY_DCGM))
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


def _observed_cards(observed: pl.DataFrame, declared_layout: pl.DataFrame) -> pl.DataFrame:
    """The observed rows that can differ from the config: MIG rows, and every row of a card
    declared as MIG or not declared (whole rows of a card declared whole, with no MIG row in
    the hour, agree). Whole-GPU rows are dropped where the card also had MIG rows that hour.
    ``_layout_declared``: the card's declared layout (null: not declared)."""
    if "source" not in observed.columns:  # rows of the DCGM rollup alone
        observed = observed.with_columns(source=pl.lit(OBSERVED_BY_DCGM))
    joined = observed.join(declared_layout, on=CARD, how="left")
    candidates = joined.filter(
        pl.col("gpu_i_profile").is_not_null() | (pl.col("_layout_declared").fill_null("") != WHOLE)
    )
    has_mig = pl.col("gpu_i_profile").is_not_null().any().over(*CARD, "hour")
    return candidates.filter(pl.col("gpu_i_profile").is_not_null() | ~has_mig)


def _declared_layout(declared: pl.DataFrame) -> pl.DataFrame:
    return _layout(declared, CARD).rename({"_layout": "_layout_declared"}).collect()


def _changed_hours(seen: pl.DataFrame, declared: pl.DataFrame) -> pl.LazyFrame:
    """Per card and hour of ``seen`` (``_observed_cards`` rows): its observed and declared layouts,
    where they differ, unless the observed MIG instances are some of the declared ones (an
    instance without samples in an hour is not removed)."""
    mig = pl.col("gpu_i_profile").is_not_null()
    counts = declared.lazy().filter(mig).group_by(*CARD, "gpu_i_profile").agg(pl.len().alias("_declared_n"))
    within = (
        seen.lazy()
        .filter(mig)
        .group_by(*CARD, "hour", "gpu_i_profile")
        .agg(pl.len().alias("_n"))
        .join(counts, on=[*CARD, "gpu_i_profile"], how="left")
        .group_by(*CARD, "hour")
        .agg((pl.col("_n") <= pl.col("_declared_n").fill_null(0)).all().alias("_within"))
    )
    return (
        _layout(seen, [*CARD, "hour", "_layout_declared", "source"])
        .join(within, on=[*CARD, "hour"], how="left")
        .filter((pl.col("_layout") != pl.col("_layout_declared").fill_null("")) & ~pl.col("_within").fill_null(False))
        .drop("_within")
    )


def hourly_inventory(
    declared: pl.DataFrame,
    observed: pl.DataFrame,
    period_start: datetime,
    period_end: datetime,
    mig_weight: Callable[[str], float],
) -> pl.DataFrame:
    """``declared`` (config/frames.py INVENTORY_SCHEMA) x each hour of [period_start, period_end),
    with the cards observed otherwise replaced by their observation (module docstring): rows
    in INVENTORY_SCHEMA + ``hour``. When no card differs in any hour, ``declared`` itself (no
    ``hour`` column: every hour the same), which the capacity functions take as before."""
    hours = pl.datetime_range(period_start, period_end, "1h", closed="left", eager=True).alias("hour").to_frame()
    hours = hours.with_columns(pl.col("hour").cast(pl.Datetime("us")))
    in_period = observed.filter(pl.col("hour").is_between(period_start, period_end, closed="left"))
    in_period = in_period.join(declared.select("cluster", "hostname").unique(), on=["cluster", "hostname"], how="semi")
    seen = _observed_cards(in_period, _declared_layout(declared))
    changed = _changed_hours(seen, declared).select(*CARD, "hour").collect()
    if changed.is_empty():
        return declared
    kept = declared.join(hours, how="cross").join(changed, on=[*CARD, "hour"], how="anti")
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
    return pl.concat([kept, replaced.select(kept.columns).cast(kept.schema)])


def inventory_differences(declared: pl.DataFrame, observed: pl.DataFrame) -> pl.DataFrame:
    """Per card and (declared, observed) layout pair that differ: the hours affected (DIFFERENCE_SCHEMA).
    A card observed but not declared has ``declared`` = ``NOT_DECLARED``."""
    return (
        _changed_hours(_observed_cards(observed, _declared_layout(declared)), declared)
        .with_columns(pl.col("_layout_declared").fill_null(pl.lit(NOT_DECLARED)))
        .group_by(
            *CARD,
            pl.col("_layout_declared").alias("declared"),
            pl.col("_layout").alias("observed"),
            pl.col("source").alias("observed_by"),
        )
        .agg(pl.len().alias("hours"), pl.col("hour").min().alias("first_hour"), pl.col("hour").max().alias("last_hour"))
        .with_columns(what=pl.lit(LAYOUT_DIFFERENCE))
        .select(list(DIFFERENCE_SCHEMA))
        .cast(DIFFERENCE_SCHEMA)
        .sort(*CARD, "first_hour")
        .collect()
    )


# How a card was observed, by ``source`` (DCGM's rows: "reported samples" / "ran").
_SEEN = {
    OBSERVED_BY_KUBE: "was advertised by its Kubernetes node",
    OBSERVED_BY_SLURM: "is in its Slurm node's GRES (scontrol)",
}
_RAN = {OBSERVED_BY_KUBE: "was advertised", OBSERVED_BY_SLURM: "is in the Slurm node's GRES"}


def difference_advice(row: dict) -> str:
    """A plain-language line on what to change in the config for one ``inventory_differences`` row."""
    where = f"{row['cluster']} {row['hostname']} GPU {row['gpu']}"
    if row.get("what", LAYOUT_DIFFERENCE) != LAYOUT_DIFFERENCE:
        return (
            f"{where} reported model {row['observed']!r} but its node group declares model_name "
            f"{row['declared']!r}: correct model_name and gpu_model there (the price follows gpu_model)."
        )
    by = row.get("observed_by")
    if row["declared"] == NOT_DECLARED:
        seen = _SEEN.get(by, "reported samples")
        return f"{where} {seen} but is not in [[clusters.inventory.node_groups]]: add it to a node group."
    ran = _RAN.get(by, "ran")
    if row["observed"] == WHOLE:
        return f"{where} {ran} whole but is declared as MIG {row['declared']}: remove its mig_layout."
    return (
        f"{where} {ran} as MIG {row['observed']} but is declared as {row['declared']}: "
        f"set mig_layout = {row['observed'].split('+')} on its node group (or split the group)."
    )
