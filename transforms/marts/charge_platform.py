"""The platform's part of a month's capacity: the GPU-hours in the states no idle-cost policy
charges to departments (``contracts/capacity_states.py`` ``PLATFORM_STATES``: down, planned
down), per cluster, GPU model label and price segment, from ``marts.fct_gpu_capacity_split``.

``int_charge_idle`` takes them out of the idle capacity before its policy spreads the rest: they
stay with the platform owner as rows of their own, one per state (FOCUS ``x_ChargeKind``
``down_capacity``, ``planned_down_capacity``; the idle rows keep ``idle_capacity``).
"""

from __future__ import annotations

import polars as pl

from contracts.capacity_states import IDLE, PLATFORM_STATES, PRECEDENCE, state_column
from transforms.helpers.charge_money import float_micro

IDLE_KIND = "idle_capacity"
# capacity state of an idle-kind row -> its FOCUS x_ChargeKind
CHARGE_KINDS: dict[str, str] = {IDLE: IDLE_KIND, **{state: f"{state}_capacity" for state in PLATFORM_STATES}}
# capacity state -> how a FOCUS ChargeDescription names it ("Idle", "Down", "Planned down")
CAPACITY_TITLES: dict[str, str] = {state: state.replace("_", " ").capitalize() for state in CHARGE_KINDS}
# Taken out of the idle capacity in this order (a segment's idle capacity is never exceeded).
PLATFORM_ORDER: tuple[str, ...] = tuple(state for state in PRECEDENCE if state in PLATFORM_STATES)
PLATFORM_HOURS: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "gpu_model": pl.String(),  # label as fct_job_usage writes it ("A100 3g.40gb" for a MIG profile)
    "hour": pl.Datetime("us"),
    "state": pl.String(),
    "gpu_seconds": pl.Float64(),
}
SEGMENT = ["cluster", "gpu_model", "charge_period_start", "charge_period_end"]


def platform_hours(split: pl.DataFrame) -> pl.DataFrame:
    """``PLATFORM_HOURS`` rows from fct_gpu_capacity_split rows: per cluster, label, hour and
    platform state, the GPU-seconds in it."""
    label = (
        pl.when(pl.col("gpu_i_profile").is_null())
        .then(pl.col("gpu_model"))
        .otherwise(pl.format("{} {}", "gpu_model", "gpu_i_profile"))
    )
    sums = split.group_by("cluster", label.alias("gpu_model"), "hour").agg(
        [pl.col(state_column(state)).sum().alias(state) for state in PLATFORM_STATES]
    )
    long = sums.unpivot(index=["cluster", "gpu_model", "hour"], variable_name="state", value_name="gpu_seconds")
    return long.filter(pl.col("gpu_seconds") > 0).select(list(PLATFORM_HOURS)).cast(PLATFORM_HOURS)


def platform_segments(hours: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """Per price segment (``SEGMENT``) and platform state: ``platform_micro``, micro-GPU-hours
    (an hour cut by a price change is shared by seconds)."""
    end = pl.col("hour") + pl.duration(hours=1)
    joined = hours.join(segments.select(SEGMENT).unique(), on=["cluster", "gpu_model"]).filter(
        (pl.col("hour") < pl.col("charge_period_end")) & (end > pl.col("charge_period_start"))
    )
    overlap = pl.min_horizontal(end, "charge_period_end") - pl.max_horizontal("hour", "charge_period_start")
    share = overlap.dt.total_microseconds() / 3.6e9
    return joined.group_by([*SEGMENT, "state"]).agg(
        float_micro((pl.col("gpu_seconds") * share).sum() / 3600).alias("platform_micro")
    )


def take_platform(idle: pl.DataFrame, hours: pl.DataFrame | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(idle rows less the platform's micro-GPU-hours, the platform's rows): per segment of
    ``idle`` (``idle_gpu_hours_micro``), each platform state in ``PLATFORM_ORDER`` takes its
    micro-GPU-hours, at most what idle capacity is left (never below 0)."""
    taken = []
    if hours is None or hours.is_empty():
        return idle, idle.clear().with_columns(pl.lit(None, pl.String()).alias("capacity_state"))
    amounts = platform_segments(hours, idle)
    for state in PLATFORM_ORDER:
        mine = amounts.filter(pl.col("state") == state).select(*SEGMENT, "platform_micro")
        idle = idle.join(mine, on=SEGMENT, how="left").with_columns(
            _take=pl.min_horizontal(pl.col("platform_micro").fill_null(0), pl.col("idle_gpu_hours_micro").clip(0))
        )
        taken.append(idle.filter(pl.col("_take") > 0).with_columns(capacity_state=pl.lit(state)))
        idle = idle.with_columns(idle_gpu_hours_micro=pl.col("idle_gpu_hours_micro") - pl.col("_take")).drop(
            "platform_micro", "_take"
        )
    rows = pl.concat(taken).with_columns(idle_gpu_hours_micro=pl.col("_take")).drop("platform_micro", "_take")
    return idle, rows
