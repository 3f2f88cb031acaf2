"""Which cards' observed rows can change the inventory of an hour: a filter that lets a reader
fetch only those rows of the month's observed inventory (a million rows for 1,000 GPUs, nearly
all of cards that ran as declared).

A card (cluster, host, GPU) never differs from the config in any hour when, over the period,
each layout part it was observed with (whole, or a MIG profile) had no more distinct instances
than the config declares of that part (a whole row in an hour with MIG rows of the card, such
as a MIG GPU's device row, does not count: ``hourly_inventory`` drops it too): whole rows of
a card declared whole agree, and the MIG instances of a card declared MIG are then some of the
declared ones in every hour, which ``int_gpu_inventory_observed.hourly_inventory`` keeps as
declared. Every other card may differ
(MIG on a card declared whole, whole on one declared MIG, another profile, more instances, a
GPU not declared), and ``hourly_inventory`` judges it hour by hour from its rows.
"""

from __future__ import annotations

import polars as pl

from transforms.intermediate.int_gpu_inventory_observed import CARD

PART = [*CARD, "gpu_i_profile"]  # gpu_i_profile null: the whole GPU
COUNTS_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "gpu_i_profile": pl.String(),
    "instances": pl.Int64(),
}


def instance_counts(observed: pl.DataFrame) -> pl.DataFrame:
    """Per card and layout part of observed rows (SCHEMA of int_gpu_inventory_observed): its
    distinct instances (a whole GPU is one; whole rows beside MIG rows in an hour left out), in
    COUNTS_SCHEMA. ``warehouse.books.inventory.COUNTS_SQL`` is the same in SQL."""
    mig = observed.filter(pl.col("gpu_i_profile").is_not_null())
    whole = observed.filter(pl.col("gpu_i_profile").is_null()).join(
        mig.select(*CARD, "hour").unique(), on=[*CARD, "hour"], how="anti"
    )
    return (
        pl.concat([mig, whole])
        .group_by(PART)
        .agg(pl.col("gpu_i_id").fill_null(-1).n_unique().alias("instances"))
        .select(list(COUNTS_SCHEMA))
        .cast(COUNTS_SCHEMA)
    )


def cards_that_may_differ(declared: pl.DataFrame, counts: pl.DataFrame) -> pl.DataFrame:
    """The cards (CARD columns) of ``counts`` (``instance_counts``) that may differ from
    ``declared`` (config/frames.py INVENTORY_SCHEMA) in some hour."""
    declared_counts = declared.group_by(PART).agg(pl.len().cast(pl.Int64).alias("_declared"))
    return (
        counts.cast(COUNTS_SCHEMA)
        .join(declared_counts.cast({"gpu": pl.Int16()}), on=PART, how="left", nulls_equal=True)
        .filter(pl.col("instances") > pl.col("_declared").fill_null(0))
        .select(CARD)
        .unique()
        .sort(CARD)
    )
