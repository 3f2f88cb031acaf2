"""staging.stg_dcgm__field_presence: which DCGM fields each GPU (or MIG instance) reported on a day.

One row per cluster, day, hostname, gpu, uuid, gpu_i_id and raw value column (``field``,
every column of ``contracts.schemas.SAMPLE_VALUE_COLUMNS``, also those never seen:
``n_samples`` 0 records the absence). Values are in raw units (``gpu_util`` in %).

``suspect_flat_zero``: the field was present and exactly 0 in every sample of the day
while another activity field of the same instance moved: the known exporter failure of
GR_ENGINE_ACTIVE stuck at 0 while the SMs work. Two refinements keep it from crying wolf
(both from the real H200 trace and the simulator shapes built on it):

- Only fields that any GPU work must move are judged (``FLAT_ZERO_SUSPECT_FIELDS``):
  ``tensor_active`` and ``dram_active`` legitimately stay at exactly 0 while the SMs work
  (the trace's "starved" and "tiny" jobs); they can still be the field that moves.
- "Moved" means reached ``moving_min`` (default 0.01 as a ratio; gpu_util / 100) at least
  once, not merely non-zero: a job holding memory and doing nothing (the trace's "hog")
  reads GR_ENGINE_ACTIVE ~1e-4 with SM_ACTIVE and GPU_UTIL at 0, which is consistent.
"""

from __future__ import annotations

from datetime import date

import polars as pl

from contracts.schemas import SAMPLE_VALUE_COLUMNS

INSTANCE_KEY = ("cluster", "hostname", "gpu", "uuid", "gpu_i_id")
ACTIVITY_FIELDS = ("gpu_util", "gr_engine_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active")
# Activity fields that cannot legitimately sit at exactly 0 all day while another one moves.
FLAT_ZERO_SUSPECT_FIELDS = ("gpu_util", "gr_engine_active", "sm_active", "sm_occupancy")
MOVING_MIN = 0.01  # an activity field "moves" when its day maximum (as a 0-1 ratio) reaches this

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "day": pl.Date(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "uuid": pl.String(),
    "gpu_i_id": pl.Int16(),
    "field": pl.String(),
    "n_samples": pl.Int64(),
    "n_nonzero": pl.Int64(),
    "min_value": pl.Float64(),
    "max_value": pl.Float64(),
    "suspect_flat_zero": pl.Boolean(),
}


def _field_stats(field: str) -> list[pl.Expr]:
    column = pl.col(field)
    return [
        column.count().alias(f"{field}.n_samples"),
        (column != 0).sum().alias(f"{field}.n_nonzero"),
        column.min().alias(f"{field}.min_value"),
        column.max().alias(f"{field}.max_value"),
    ]


def _one_field(wide: pl.LazyFrame, field: str) -> pl.LazyFrame:
    stats = ("n_samples", "n_nonzero", "min_value", "max_value")
    return wide.select(
        *INSTANCE_KEY, pl.lit(field).alias("field"), *(pl.col(f"{field}.{stat}").alias(stat) for stat in stats)
    )


def stg_dcgm__field_presence(
    samples: pl.LazyFrame | pl.DataFrame, day: date, moving_min: float = MOVING_MIN
) -> pl.DataFrame:
    """Per instance and field: non-null and non-zero counts, min, max and the flat-zero flag."""
    wide = (
        samples.lazy()
        .group_by(list(INSTANCE_KEY))
        .agg(*(expr for field in SAMPLE_VALUE_COLUMNS for expr in _field_stats(field)))
    )
    long = pl.concat([_one_field(wide, field) for field in SAMPLE_VALUE_COLUMNS])
    ratio_max = pl.when(pl.col("field") == "gpu_util").then(pl.col("max_value") / 100).otherwise(pl.col("max_value"))
    moves = pl.col("field").is_in(ACTIVITY_FIELDS) & (pl.col("n_nonzero") > 0) & (ratio_max >= moving_min)
    another_moves = moves.any().over(list(INSTANCE_KEY))  # a flat-zero field never moves itself
    flat_zero = (pl.col("n_samples") > 0) & (pl.col("n_nonzero") == 0)
    return (
        long.with_columns(pl.lit(day, pl.Date).alias("day"))
        .with_columns(
            (pl.col("field").is_in(FLAT_ZERO_SUSPECT_FIELDS) & flat_zero & another_moves).alias("suspect_flat_zero")
        )
        .select(list(SCHEMA))
        .cast(SCHEMA)
        .sort(["cluster", "hostname", "gpu", "gpu_i_id", "field"], nulls_last=False)
        .collect()
    )


def presence_summary(presence: pl.DataFrame) -> dict[str, dict[str, int]]:
    """Per field: instances that reported it (``present``) and how many were flagged suspect."""
    counted = (
        presence.group_by("field")
        .agg(
            (pl.col("n_samples") > 0).sum().alias("present"),
            pl.col("suspect_flat_zero").sum().alias("suspect_flat_zero"),
        )
        .sort("field")
    )
    return {
        row["field"]: {"present": int(row["present"]), "suspect_flat_zero": int(row["suspect_flat_zero"])}
        for row in counted.iter_rows(named=True)
    }


def add_summaries(parts: list[dict[str, dict[str, int]]]) -> dict[str, dict[str, int]]:
    """``presence_summary`` of several parts of a day's instances (shards of hosts) as one."""
    total: dict[str, dict[str, int]] = {}
    for part in parts:
        for name, counts in part.items():
            mine = total.setdefault(name, dict.fromkeys(counts, 0))
            for key, n in counts.items():
                mine[key] += n
    return total
