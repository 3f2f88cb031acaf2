"""intermediate.int_charge_idle: the month's idle capacity (capacity no run held), priced,
and who carries it under ``rates.idle_capacity``.

Per cluster x GPU model label (``"H100"``, ``"A100 3g.40gb"``) x price segment: capacity
micro-GPU-hours (the month's capacity, rounded half up to 1e-6, split over the segments by
seconds with cumulative rounding), minus the charge lines' micro-GPU-hours of that label and
segment = idle. Policies:

- ``none``: one row per cluster x label x segment for the platform owner (department and
  division ``(unallocated)``, idle_share 1).
- ``proportional``: idle split over the cluster's departments by their card-hours in the month
  (all models), largest remainder in micro-GPU-hours so the shares add up exactly.
- ``even``: the same with equal weights for every department with card-hours on the cluster.

Before a policy applies, the GPU-hours the capacity split (``marts.fct_gpu_capacity_split``) puts
in a platform state (down, planned down: ``transforms/marts/charge_platform.py``) are taken out of
the idle capacity: under every policy they stay with the platform owner, one row per state
(``capacity_state``); the idle rows carry ``capacity_state`` ``idle`` (reserved time included).

A cluster without charged departments, or an idle amount below 0 (jobs held more than the
inventory; the reconciliation fails), stays with the platform owner. Each row's cost is its
quantity x the model's list price of the segment (no multipliers), rounded half up to the cent.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from contracts.capacity_states import IDLE
from contracts.chargeback import PRICE
from transforms.helpers.charge_money import cost_cents, div_half_up, float_micro, largest_remainder, to_scaled_int
from transforms.marts.charge_lines import base_model
from transforms.marts.charge_platform import take_platform

UNALLOCATED = "(unallocated)"
POLICIES = ("none", "proportional", "even")
SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "department": pl.String(),
    "division": pl.String(),
    "gpu_model": pl.String(),
    "charge_period_start": pl.Datetime("us"),
    "charge_period_end": pl.Datetime("us"),
    "capacity_gpu_hours_micro": pl.Int64(),
    "charged_gpu_hours_micro": pl.Int64(),
    "idle_gpu_hours_micro": pl.Int64(),
    "gpu_hours_micro": pl.Int64(),
    "idle_share": pl.Float64(),
    "unit_price_micro": pl.Int64(),
    "cost_cents": pl.Int64(),
    "is_priced": pl.Boolean(),
    "idle_policy": pl.String(),
    "capacity_state": pl.String(),  # idle (the policy's rows), or a platform state (the owner's)
}
SEGMENT = ["cluster", "gpu_model", "charge_period_start", "charge_period_end"]


def _capacity_segments(capacity: pl.DataFrame, prices: pl.DataFrame, start: datetime, end: datetime) -> pl.DataFrame:
    """capacity (cluster, gpu_model, capacity_gpu_hours) -> per segment micro-GPU-hours."""
    month_seconds = int((end - start).total_seconds())
    rows = (
        capacity.with_columns(
            float_micro(pl.col("capacity_gpu_hours")).alias("_cap"), base_model(pl.col("gpu_model")).alias("_model")
        )
        .join(prices.rename({"gpu_model": "_model"}), on="_model", how="left")
        .with_columns(
            pl.col("charge_period_start").fill_null(pl.lit(start)),
            pl.col("charge_period_end").fill_null(pl.lit(end)),
            to_scaled_int(pl.col("list_unit_price").cast(PRICE), 6).alias("unit_price_micro"),
        )
        .sort(SEGMENT)
    )
    seconds = (pl.col("charge_period_end") - pl.col("charge_period_start")).dt.total_seconds()
    upto = div_half_up(pl.col("_cap").cast(pl.Int128) * seconds.cum_sum().over("cluster", "gpu_model"), month_seconds)
    rows = rows.with_columns(upto.alias("_upto"))
    return rows.with_columns(
        (pl.col("_upto") - pl.col("_upto").shift(1, fill_value=0).over("cluster", "gpu_model"))
        .cast(pl.Int64)
        .alias("capacity_gpu_hours_micro")
    )


def _weights(lines: pl.DataFrame, policy: str) -> pl.DataFrame:
    """cluster, department, division, weight (int) of the departments that carry idle."""
    used = lines.group_by("cluster", "department", "division").agg(pl.col("gpu_hours_micro").sum().alias("weight"))
    used = used.filter(pl.col("weight") > 0)
    if policy == "even":
        used = used.with_columns(pl.lit(1, pl.Int64).alias("weight"))
    return used


def int_charge_idle(
    lines: pl.DataFrame,
    capacity: pl.DataFrame,
    prices: pl.DataFrame,
    policy: str,
    period_start: datetime,
    period_end: datetime,
    platform: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Idle rows (SCHEMA). ``lines``: int_charge_lines rows; ``capacity``: cluster, gpu_model
    (label), capacity_gpu_hours (float, the month); ``prices`` as for int_charge_lines;
    ``platform``: ``charge_platform.PLATFORM_HOURS`` rows (None: no downtime known)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown idle-capacity policy {policy!r} (one of {', '.join(POLICIES)})")
    segments = _capacity_segments(capacity, prices, period_start, period_end)
    charged = lines.group_by(SEGMENT).agg(pl.col("gpu_hours_micro").sum().alias("charged_gpu_hours_micro"))
    idle = (
        segments.join(charged, on=SEGMENT, how="left")
        .with_columns(pl.col("charged_gpu_hours_micro").fill_null(0))
        .with_columns(
            (pl.col("capacity_gpu_hours_micro") - pl.col("charged_gpu_hours_micro")).alias("idle_gpu_hours_micro")
        )
    )
    idle, owned = take_platform(idle, platform)
    weights = _weights(lines if policy != "none" else lines.clear(), policy)  # none: nobody carries idle
    spread = idle.filter(pl.col("idle_gpu_hours_micro") >= 0).join(weights, on="cluster", how="inner")
    kept = idle.join(spread.select("cluster").unique(), on="cluster", how="anti").with_columns(
        pl.lit(UNALLOCATED).alias("department"),
        pl.lit(UNALLOCATED).alias("division"),
        pl.col("idle_gpu_hours_micro").alias("gpu_hours_micro"),
        pl.lit(1.0).alias("idle_share"),
    )
    negative = idle.filter(pl.col("idle_gpu_hours_micro") < 0).join(spread.select("cluster").unique(), on="cluster")
    kept = pl.concat(
        [
            kept,
            negative.with_columns(
                pl.lit(UNALLOCATED).alias("department"),
                pl.lit(UNALLOCATED).alias("division"),
                pl.col("idle_gpu_hours_micro").alias("gpu_hours_micro"),
                pl.lit(1.0).alias("idle_share"),
            ),
        ],
        how="diagonal_relaxed",
    )
    spread = largest_remainder(spread, "idle_gpu_hours_micro", "weight", SEGMENT, ["department"], "gpu_hours_micro")
    spread = spread.with_columns((pl.col("weight") / pl.col("weight").sum().over(SEGMENT)).alias("idle_share"))
    owned = owned.with_columns(
        pl.lit(UNALLOCATED).alias("department"),
        pl.lit(UNALLOCATED).alias("division"),
        pl.col("idle_gpu_hours_micro").alias("gpu_hours_micro"),
        pl.lit(1.0).alias("idle_share"),
    )
    idle_rows = pl.concat([kept, spread], how="diagonal_relaxed").with_columns(pl.lit(IDLE).alias("capacity_state"))
    rows = pl.concat([idle_rows, owned], how="diagonal_relaxed").with_columns(
        cost_cents(pl.col("gpu_hours_micro"), pl.col("unit_price_micro")).fill_null(0).alias("cost_cents"),
        pl.col("unit_price_micro").is_not_null().alias("is_priced"),
        pl.lit(policy).alias("idle_policy"),
    )
    return rows.select(pl.col(n).cast(t) for n, t in SCHEMA.items()).sort([*SEGMENT, "capacity_state", "department"])


def capacity_by_model(inventory: pl.DataFrame, period_start: datetime, period_end: datetime) -> pl.DataFrame:
    """cluster, gpu_model (label as fct_job_usage writes it: ``"A100 3g.40gb"`` for a MIG
    profile), capacity_gpu_hours: the inventory's GPU fractions x hours of the period. An inventory
    with an ``hour`` column (warehouse/books/inventory.py) gives each hour's rows."""
    label = (
        pl.when(pl.col("gpu_i_profile").is_null())
        .then(pl.col("gpu_model"))
        .otherwise(pl.format("{} {}", "gpu_model", "gpu_i_profile"))
    )
    if "hour" not in inventory.columns:  # the config's inventory, the same every hour
        hours = (period_end - period_start).total_seconds() / 3600
        inventory = inventory.with_columns(pl.lit(None, pl.Datetime("us")).alias("hour"))
    else:
        hours = 1.0
    # Hours with the same count of each label and fraction are multiplied, not added one by one:
    # an inventory the same every hour gives count x fraction x hours, as the config's does.
    per_hour = inventory.group_by("cluster", label.alias("gpu_model"), "gpu_fraction", "hour").len()
    return (
        per_hour.group_by("cluster", "gpu_model", "gpu_fraction", "len")
        .agg(pl.len().alias("_hours"))
        .sort("cluster", "gpu_model", "gpu_fraction", "len")
        .group_by("cluster", "gpu_model", maintain_order=True)
        .agg((pl.col("len") * pl.col("gpu_fraction") * (pl.col("_hours") * hours)).sum().alias("capacity_gpu_hours"))
    )
