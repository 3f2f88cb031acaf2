"""The last 12 months, from the monthly marts: allocation, activity, idle and its cost."""

from __future__ import annotations

from functools import partial

import polars as pl

from reports.data import ReviewInputs
from reports.html import Column, Section, figure_html, fmt_float, fmt_pct, table
from reports.time_figures import monthly_hours_figure, monthly_shares_figure

fmt_hours = partial(fmt_float, decimals=1)
fmt_money = partial(fmt_float, decimals=2)


def _share(num: str, den: str) -> pl.Expr:
    return pl.when(pl.col(den) > 0).then(pl.col(num) / pl.col(den))


def cluster_shares(clusters: pl.DataFrame) -> pl.DataFrame:
    """Per cluster and month: allocated share of capacity, active share of allocated."""
    return clusters.select(
        "cluster",
        "month",
        _share("allocated_gpu_hours", "capacity_gpu_hours").alias("allocated_share"),
        _share("active_gpu_hours", "allocated_gpu_hours").alias("active_share"),
    ).sort("cluster", "month")


def monthly_totals(inputs: ReviewInputs) -> pl.DataFrame:
    """All clusters per month: GPU-hours by kind, shares, and the idle costs (dated list prices)."""
    costs = inputs.models.group_by("month").agg(pl.col("workload_idle_cost").sum(), pl.col("infra_idle_cost").sum())
    return (
        inputs.clusters.group_by("month")
        .agg(
            pl.col(c).sum() for c in ("capacity_gpu_hours", "allocated_gpu_hours", "active_gpu_hours", "idle_gpu_hours")
        )
        .with_columns(
            (pl.col("capacity_gpu_hours") - pl.col("allocated_gpu_hours")).alias("infra_idle_gpu_hours"),
            _share("allocated_gpu_hours", "capacity_gpu_hours").alias("allocated_share"),
            _share("active_gpu_hours", "allocated_gpu_hours").alias("active_share"),
        )
        .join(costs, on="month", how="left")
        .sort("month")
    )


def trend_columns(currency: str) -> list[Column]:
    return [
        Column("month", "month", lambda m: f"{m:%Y-%m}"),
        Column("capacity_gpu_hours", "capacity (GPU-hours)", fmt_hours, True),
        Column("allocated_share", "allocated (% of capacity)", fmt_pct, True),
        Column("active_share", "active (% of allocated)", fmt_pct, True),
        Column("idle_gpu_hours", "workload idle (GPU-hours)", fmt_hours, True),
        Column("workload_idle_cost", f"workload idle cost ({currency})", fmt_money, True),
        Column("infra_idle_gpu_hours", "infra idle (GPU-hours)", fmt_hours, True),
        Column("infra_idle_cost", f"infra idle cost ({currency})", fmt_money, True),
    ]


def trends_section(inputs: ReviewInputs) -> Section:
    values: dict = {"table": None}
    if not inputs.clusters.is_empty():
        totals = monthly_totals(inputs)
        values = {
            "shares": figure_html(monthly_shares_figure(cluster_shares(inputs.clusters)), "fig-trend-shares"),
            "hours": figure_html(monthly_hours_figure(totals), "fig-trend-hours"),
            "table": table(totals, trend_columns(inputs.settings.currency or "currency")),
            "months": totals.height,
            "month": f"{inputs.month:%Y-%m}",
        }
    return Section("trends", "Trends over the last 12 months", "sections/trends.html", values)
