"""The review flag rules: the thresholds they read, the row shape every rule returns, and helpers.

Each rule is a function ``rule(jobs, thresholds) -> frame`` over the prepared per-run frame
built by ``transforms.marts.fct_job_flags`` (fct_job_usage columns plus ``_run``, the card's
memory, GPUs per node, host count and the time-shape features of
``transforms.marts.job_activity_profile``); it returns RULE_SCHEMA rows, one per flagged run.
Each rule module lists its rules in ``RULES``; the codes they emit are declared in
contracts/flags.py.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from config.policy import FlagsConfig
from contracts.flags import flag_reason

# The rules read the config's ``[flags]`` section as validated: FlagsConfig is the one
# declaration of the thresholds (names, types, bounds, defaults, units).
Thresholds = FlagsConfig
Rule = Callable[[pl.DataFrame, Thresholds], pl.DataFrame]

RULE_SCHEMA: dict[str, pl.DataType] = {
    "_run": pl.UInt32(),
    "reason": pl.String(),
    "severity": pl.String(),
    "detail": pl.String(),
    "recommendation": pl.String(),
    "wasted_gpu_hours": pl.Float64(),
}


def emit(
    flagged: pl.DataFrame,
    reason: str,
    detail: pl.Expr,
    wasted_gpu_hours: pl.Expr,
    *,
    severity: pl.Expr | None = None,
    recommendation: pl.Expr | None = None,
) -> pl.DataFrame:
    """RULE_SCHEMA rows for the runs in ``flagged`` (already filtered by the rule).

    ``reason``: a code of contracts/flags.py; its severity and recommendation come
    from there unless the rule words them per run (``severity``, ``recommendation``)."""
    entry = flag_reason(reason)
    if severity is None:
        if len(entry.severities) != 1:
            raise ValueError(f"{reason} has severities {entry.severities}: its rule must pick one per run")
        severity = pl.lit(entry.severities[0])
    if recommendation is None:
        if entry.recommendation is None:
            raise ValueError(f"{reason} has no fixed recommendation: its rule must word one per run")
        recommendation = pl.lit(entry.recommendation)
    return flagged.select(
        pl.col("_run"),
        pl.lit(reason).alias("reason"),
        severity.alias("severity"),
        detail.alias("detail"),
        recommendation.alias("recommendation"),
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
    return (
        pl.col("utilization").is_not_null()
        & (pl.col("elapsed_seconds") >= thresholds.min_runtime_minutes * 60.0)
        & (pl.col("gpu_hours") > 0)
    )
