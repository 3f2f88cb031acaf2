"""Figures over time: 12-month trends and the hour-of-day / day-of-week profile."""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl

from reports.figures import ACTIVE_COLOR, CLUSTER_COLORS, IDLE_COLOR, base_layout
from reports.html import esc_plotly

INFRA_COLOR = "#c9ced6"
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def monthly_hours_figure(months: pl.DataFrame) -> go.Figure:
    """Stacked bars per month: active, workload idle and (when given) infra idle GPU-hours.

    ``months``: month, active_gpu_hours, idle_gpu_hours[, infra_idle_gpu_hours].
    """
    labels = [f"{m:%Y-%m}" for m in months["month"]]
    fig = go.Figure()
    series = [("active_gpu_hours", "active", ACTIVE_COLOR), ("idle_gpu_hours", "workload idle", IDLE_COLOR)]
    if "infra_idle_gpu_hours" in months.columns:
        series.append(("infra_idle_gpu_hours", "infra idle", INFRA_COLOR))
    for column, name, color in series:
        fig.add_trace(
            go.Bar(
                x=labels,
                y=months[column].fill_null(0.0).to_list(),
                name=name,
                marker=dict(color=color),
                hovertemplate=f"%{{x}}<br>{name}: %{{y:,.1f}} GPU-hours<extra></extra>",
            )
        )
    fig.update_layout(**base_layout(340, "month", "GPU-hours"))
    fig.update_layout(barmode="stack", legend_traceorder="normal", bargap=0.3)
    fig.update_xaxes(type="category")
    return fig


def monthly_shares_figure(shares: pl.DataFrame) -> go.Figure:
    """Lines per cluster: allocated % of capacity (solid) and active % of allocated (dotted).

    ``shares``: cluster, month, allocated_share, active_share (ratios 0-1).
    """
    fig = go.Figure()
    clusters = shares["cluster"].unique(maintain_order=True).to_list()
    for index, cluster in enumerate(clusters):
        part = shares.filter(pl.col("cluster") == cluster)
        color = CLUSTER_COLORS[index % len(CLUSTER_COLORS)]
        name = esc_plotly(cluster)
        for column, what, dash in (
            ("allocated_share", "allocated (% of capacity)", "solid"),
            ("active_share", "active (% of allocated)", "dot"),
        ):
            fig.add_trace(
                go.Scatter(
                    x=[f"{m:%Y-%m}" for m in part["month"]],
                    y=(part[column] * 100).to_list(),
                    mode="lines+markers",
                    name=f"{name}: {what}",
                    line=dict(color=color, dash=dash),
                    hovertemplate=f"{name} %{{x}}<br>{what}: %{{y:.1f}}%<extra></extra>",
                )
            )
    fig.update_layout(**base_layout(340, "month", "share (%)"))
    fig.update_xaxes(type="category")
    fig.update_yaxes(range=[0, 105])
    return fig


def hour_of_day_figure(profile: pl.DataFrame) -> go.Figure:
    """Allocated and active share of capacity per hour of day (UTC), over the month.

    ``profile``: hour_of_day (0-23), allocated_share, active_share.
    """
    fig = go.Figure()
    for column, name, color in (("allocated_share", "allocated", IDLE_COLOR), ("active_share", "active", ACTIVE_COLOR)):
        fig.add_trace(
            go.Scatter(
                x=profile["hour_of_day"].to_list(),
                y=(profile[column] * 100).to_list(),
                name=name,
                mode="lines+markers",
                line=dict(color=color),
                hovertemplate=f"%{{x}}:00 UTC<br>{name}: %{{y:.1f}}% of capacity<extra></extra>",
            )
        )
    fig.update_layout(**base_layout(320, "hour of day (UTC)", "% of capacity"))
    fig.update_xaxes(range=[-0.5, 23.5], dtick=2)
    fig.update_yaxes(range=[0, 105])
    return fig


def weekday_hour_figure(grid: pl.DataFrame) -> go.Figure:
    """Heatmap of the allocated share of capacity per day of week and hour of day (UTC).

    ``grid``: weekday (1 = Monday), hour_of_day, allocated_share.
    """
    z = [[None] * 24 for _ in WEEKDAYS]
    for weekday, hour, share in grid.select("weekday", "hour_of_day", "allocated_share").iter_rows():
        z[weekday - 1][hour] = None if share is None else share * 100
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(24)),
            y=list(WEEKDAYS),
            zmin=0,
            zmax=100,
            colorscale="Blues",
            colorbar=dict(title=dict(text="% allocated")),
            hovertemplate="%{y} %{x}:00 UTC<br>allocated: %{z:.1f}%<extra></extra>",
        )
    )
    fig.update_layout(**base_layout(300, "hour of day (UTC)", "day of week"))
    fig.update_yaxes(autorange="reversed")
    return fig
