"""The review flag rules: shared thresholds, the row shape every rule returns, and helpers.

Each rule is a function ``rule(jobs, thresholds) -> frame`` over the prepared per-run frame
built by ``transforms.fct_job_flags`` (fct_job_usage columns plus ``_run``, the card's
memory, GPUs per node, host count and the time-shape features of
``transforms.int_job_activity_profiled``); it returns RULE_SCHEMA rows, one per flagged run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

REASONS = (
    "ZERO_UTIL",
    "LOW_UTIL",
    "MEMORY_HELD_IDLE",
    "BUSY_ENGINE_IDLE_SMS",
    "INPUT_BOUND",
    "OVERSIZED",
    "IDLE_TAIL",
    "DEBUG_OVER_LIMIT",
    "MULTINODE_FRAGMENTED",
)
SEVERITIES = ("high", "medium", "low")  # most severe first
SEVERITY_RANK = {severity: rank for rank, severity in enumerate(SEVERITIES)}
REASON_RANK = {reason: rank for rank, reason in enumerate(REASONS)}

RULE_SCHEMA: dict[str, pl.DataType] = {
    "_run": pl.UInt32(),
    "reason": pl.String(),
    "severity": pl.String(),
    "detail": pl.String(),
    "recommendation": pl.String(),
    "wasted_gpu_hours": pl.Float64(),
}


@dataclass(frozen=True)
class Thresholds:
    """The config's ``flags`` section (cardhours.config.policy.FlagsConfig), as plain values."""

    zero_util_threshold: float
    zero_util_user_gpu_hours: float
    low_util_high: float
    low_util_medium: float
    min_runtime_minutes: float
    memory_held_fraction: float
    busy_engine_threshold: float
    idle_sm_threshold: float
    idle_tail_hours: float
    debug_partition: str
    debug_max_hours: float
    debug_max_concurrent_jobs: int
    low_efficiency_gpu_hours: float
    low_efficiency_utilization: float
    memory_held_max_activity: float
    low_util_exempt_memory_bound: bool
    memory_efficiency_threshold: float
    input_bound_min_activity: float
    input_bound_max_activity: float
    input_bound_min_sm_per_engine: float
    input_bound_min_steady_share: float
    oversized_max_utilization: float
    oversized_headroom: float

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> Thresholds:
        """From ``FlagsConfig.model_dump()``; a missing key is an error naming it."""
        names = [field.name for field in dataclasses.fields(cls)]
        missing = [name for name in names if name not in values]
        if missing:
            raise KeyError(f"flags thresholds missing: {', '.join(missing)}")
        return cls(**{name: values[name] for name in names})


def emit(
    flagged: pl.DataFrame,
    reason: str,
    severity: str | pl.Expr,
    detail: pl.Expr,
    recommendation: str | pl.Expr,
    wasted_gpu_hours: pl.Expr,
) -> pl.DataFrame:
    """RULE_SCHEMA rows for the runs in ``flagged`` (already filtered by the rule)."""
    def as_expr(value: str | pl.Expr) -> pl.Expr:
        return pl.lit(value) if isinstance(value, str) else value

    return flagged.select(
        pl.col("_run"),
        pl.lit(reason).alias("reason"),
        as_expr(severity).alias("severity"),
        detail.alias("detail"),
        as_expr(recommendation).alias("recommendation"),
        wasted_gpu_hours.fill_null(0.0).alias("wasted_gpu_hours"),
    ).cast(RULE_SCHEMA)


def pct(column: str | pl.Expr, digits: int = 1) -> pl.Expr:
    """A 0-1 ratio as a percent number for text (null stays null: shown as "null")."""
    expr = pl.col(column) if isinstance(column, str) else column
    return (expr * 100).round(digits)


def num(column: str | pl.Expr, digits: int = 1) -> pl.Expr:
    expr = pl.col(column) if isinstance(column, str) else column
    return expr.round(digits)


def gib(column: str) -> pl.Expr:
    """MiB as GiB with one decimal, for text."""
    return (pl.col(column) / 1024).round(1)


def judged(thresholds: Thresholds) -> pl.Expr:
    """Runs whose activity is judged: measured (utilization present) and at least the minimum runtime."""
    return pl.col("utilization").is_not_null() & (
        pl.col("elapsed_seconds") >= thresholds.min_runtime_minutes * 60.0
    ) & (pl.col("gpu_hours") > 0)
