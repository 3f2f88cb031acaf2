"""Headline numbers per cluster, each with its change against the previous month."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from functools import partial
from typing import Any

import polars as pl

from reports.data import ReviewInputs, previous_month
from reports.html import Column, Section, fmt_float, fmt_int, fmt_minutes, fmt_pct, table

fmt_hours = partial(fmt_float, decimals=1)
fmt_money = partial(fmt_float, decimals=2)
NO_PREVIOUS = "no previous month"


def _ratio(num: str, den: str) -> pl.Expr:
    return pl.when(pl.col(den) > 0).then(pl.col(num) / pl.col(den)).otherwise(None)


def model_costs(inputs: ReviewInputs, month: date) -> pl.DataFrame:
    """Per cluster: workload idle cost and infra idle cost of ``month`` (priced per model at
    the dated list prices, ``reports.pricing``)."""
    models = inputs.models.filter(pl.col("month") == month)
    return models.group_by("cluster").agg(pl.col("workload_idle_cost").sum(), pl.col("infra_idle_cost").sum())


def headline_frame(inputs: ReviewInputs, month: date) -> pl.DataFrame:
    """One row per cluster of ``month``: the headline numbers (ratios 0-1, queue in seconds)."""
    clusters = inputs.clusters.filter(pl.col("month") == month)
    return (
        clusters.join(model_costs(inputs, month), on="cluster", how="left")
        .select(
            "cluster",
            "capacity_gpu_hours",
            _ratio("allocated_gpu_hours", "capacity_gpu_hours").alias("allocated_share"),
            _ratio("active_gpu_hours", "allocated_gpu_hours").alias("active_share"),
            pl.col("idle_gpu_hours").alias("workload_idle_gpu_hours"),
            "workload_idle_cost",
            (pl.col("capacity_gpu_hours") - pl.col("allocated_gpu_hours")).alias("infra_idle_gpu_hours"),
            "infra_idle_cost",
            "job_count",
            pl.col("queue_seconds_p50").alias("queue_p50_s"),
            pl.col("queue_seconds_p95").alias("queue_p95_s"),
            "sample_coverage",
            "jobs_without_samples",
        )
        .sort("cluster")
    )


def delta_amount(now: Any, before: Any, fmt: Callable[[Any], str]) -> str:
    """``+12.0 (+4.0%)``: the change and, when the previous value is not 0, the relative one."""
    if now is None or before is None:
        return "n/a"
    change = now - before
    text = ("+" if change >= 0 else "-") + fmt(abs(change))
    return f"{text} ({(change / before) * 100:+.1f}%)" if before else text


def delta_points(now: Any, before: Any) -> str:
    """Change of a 0-1 ratio in percentage points."""
    if now is None or before is None:
        return "n/a"
    return f"{(now - before) * 100:+.1f} pp"


def delta_minutes(now: Any, before: Any) -> str:
    if now is None or before is None:
        return "n/a"
    return f"{(now - before) / 60:+.1f} min"


amount = partial(partial, delta_amount)
HEADLINE_ROWS: tuple[tuple[str, str, Callable[[Any], str], Callable[[Any, Any], str]], ...] = (
    ("capacity_gpu_hours", "capacity (GPU-hours)", fmt_hours, amount(fmt=fmt_hours)),
    ("allocated_share", "allocated (% of capacity)", fmt_pct, delta_points),
    ("active_share", "active (% of allocated)", fmt_pct, delta_points),
    ("workload_idle_gpu_hours", "workload idle: allocated, not active (GPU-hours)", fmt_hours, amount(fmt=fmt_hours)),
    ("workload_idle_cost", "workload idle cost ({currency})", fmt_money, amount(fmt=fmt_money)),
    ("infra_idle_gpu_hours", "infra idle: capacity − allocated (GPU-hours)", fmt_hours, amount(fmt=fmt_hours)),
    ("infra_idle_cost", "infra idle cost ({currency})", fmt_money, amount(fmt=fmt_money)),
    ("job_count", "jobs", fmt_int, amount(fmt=fmt_int)),
    ("queue_p50_s", "queue time p50 (min)", fmt_minutes, delta_minutes),
    ("queue_p95_s", "queue time p95 (min)", fmt_minutes, delta_minutes),
    ("sample_coverage", "sample coverage (%)", fmt_pct, delta_points),
    ("jobs_without_samples", "jobs without samples", fmt_int, amount(fmt=fmt_int)),
)


def headline_table(inputs: ReviewInputs) -> pl.DataFrame:
    """Metrics as rows; per cluster a value column ``v<i>`` and a change column ``d<i>``."""
    now = headline_frame(inputs, inputs.month).rows(named=True)
    before = {r["cluster"]: r for r in headline_frame(inputs, previous_month(inputs.month)).rows(named=True)}
    currency = inputs.settings.currency or "currency"
    rows = []
    for key, label, fmt, delta in HEADLINE_ROWS:
        row = {"metric": label.format(currency=currency)}
        for i, r in enumerate(now):
            row[f"v{i}"] = fmt(r[key])
            old = before.get(r["cluster"])
            row[f"d{i}"] = NO_PREVIOUS if old is None else delta(r[key], old[key])
        rows.append(row)
    return pl.DataFrame(rows)


def headline_section(inputs: ReviewInputs) -> Section:
    """Metrics as rows, clusters as columns with the change against the previous month."""
    clusters = headline_frame(inputs, inputs.month)["cluster"].to_list()
    rows = None
    if clusters:
        since = f"{previous_month(inputs.month):%Y-%m}"
        columns = [Column("metric", "metric")]
        for i, name in enumerate(clusters):
            columns += [Column(f"v{i}", name, numeric=True), Column(f"d{i}", f"change vs {since}", numeric=True)]
        rows = table(headline_table(inputs), columns)
    return Section("headline", "Headline numbers", "sections/headline.html", {"table": rows})
