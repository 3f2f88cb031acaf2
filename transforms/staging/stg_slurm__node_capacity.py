"""staging.stg_slurm__node_capacity: the GPUs and MIG instances each Slurm node's GRES declared, per hour.

From ``raw.slurm_node_snapshots`` (``scontrol show node --oneliner`` read when a day landed, or a
saved output: contracts/slurm_nodes.py). The columns are ``stg_kube__node_capacity``'s (the
observed inventory places both the same way): one row per cluster, node, hour and profile
(``gpu_i_profile`` null: whole GPUs) with the node's count.

- A snapshot holds from its read time until the cluster's next one: an hour takes the latest
  snapshot read before the hour's end (the layout the hour ended with, as for Kubernetes).
- An hour before the cluster's first snapshot has no row: nothing was observed, the config's
  cards count. A day landed after it ended (the usual daily run) is thus covered by the
  snapshots read when the days before it landed.
- A snapshot landed with several days (a saved file read at the same time every day) counts once.
- ``gpu:<type>:<n>`` is ``n`` whole GPUs, unless the type names a MIG profile
  (``gpu:a100_3g.20gb:2``: 2 instances of ``3g.20gb``); an untyped ``gpu:<n>`` is whole GPUs.
- Counts of 0 (a node without GPUs) and nodes whose state holds a flag of
  ``contracts.slurm_nodes.NOT_CAPACITY_FLAGS`` (``FUTURE``: declared in slurm.conf, not yet in
  service; a cloud or power-saving node powered down or powering down) are left out.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from contracts.slurm_nodes import NOT_CAPACITY_FLAGS
from transforms.staging.stg_kube__node_capacity import SCHEMA

__all__ = ["SCHEMA", "stg_slurm__node_capacity"]

_KEY = ["cluster", "hostname", "hour", "gpu_i_profile"]


def snapshots_in_effect(snapshots: pl.DataFrame, start: datetime, end: datetime) -> pl.DataFrame:
    """Per cluster and hour of ``[start, end)`` that has one: the ``read_at`` of the snapshot in effect."""
    reads = snapshots.select("cluster", "read_at").unique().sort("read_at")
    hours = pl.DataFrame({"hour": pl.datetime_range(start, end, "1h", closed="left", eager=True, time_unit="us")})
    grid = reads.select("cluster").unique().join(hours, how="cross")
    grid = grid.with_columns(_hour_end=pl.col("hour") + timedelta(hours=1)).sort("_hour_end")
    return (
        grid.join_asof(
            reads,
            left_on="_hour_end",
            right_on="read_at",
            by="cluster",
            strategy="backward",
            allow_exact_matches=False,
            check_sortedness=False,  # both sorted on their keys above
        )
        .drop_nulls("read_at")
        .select("cluster", "hour", "read_at")
    )


def stg_slurm__node_capacity(snapshots: pl.DataFrame, start: datetime, end: datetime) -> pl.DataFrame:
    """Rows in SCHEMA for the hours of ``[start, end)`` from ``raw.slurm_node_snapshots`` rows
    (with their ``day``): those of the snapshot in effect at ``start`` and those read after it."""
    once = snapshots.filter(pl.col("day") == pl.col("day").max().over("cluster", "read_at"))
    in_effect = snapshots_in_effect(once, start, end)
    flags = pl.col("state").str.to_uppercase().str.split("+")
    absent = flags.list.eval(pl.element().str.strip_chars("*~#%$@^!").is_in(list(NOT_CAPACITY_FLAGS))).list.any()
    nodes = once.filter((pl.col("gpus") > 0) & ~absent)
    return (
        in_effect.join(nodes, on=["cluster", "read_at"])
        .select(
            "cluster",
            "hostname",
            "hour",
            pl.col("mig_profile").alias("gpu_i_profile"),
            pl.col("gpus").alias("n_advertised"),
        )
        .group_by(_KEY)
        .agg(pl.col("n_advertised").sum())
        .select(list(SCHEMA))
        .cast(SCHEMA)
        .sort(_KEY, nulls_last=False)
    )
