"""Plotly figure builders: frames in, figures out.

Every data string placed in a figure goes through ``esc_plotly`` first, because
plotly.js renders a subset of HTML in tick, legend and hover labels.
Figures take the width of their box on the page (``.figure`` in page.css: the page's width, at
most 960 px, so that they also fit a landscape A4 or Letter page) and redraw when the window
is resized; their height is fixed per figure. Legends sit above the plot, never on the data.
"""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl

from reports.html import NA, esc_plotly

ACTIVE_COLOR = "#2f6fb3"
IDLE_COLOR = "#f0a35e"
CLUSTER_COLORS = ("#2f6fb3", "#d1495b", "#66a182", "#edae49", "#8e6c8a", "#00798c")
UNMAPPED = "unmapped"
UNMAPPED_NOTE = "needs a mapping"


def department_label(department: str | None, cluster: str | None = None) -> str:
    """Plain-text department label (escaped where it is placed); unmapped says so."""
    if department is None:
        label = NA
    else:
        label = f"{department} ({UNMAPPED_NOTE})" if department == UNMAPPED else department
    return label if cluster is None else f"{label} · {cluster}"


def base_layout(height: int, x_title: str, y_title: str = "") -> dict:
    return dict(
        template="plotly_white",
        autosize=True,
        height=height,
        margin=dict(l=10, r=20, t=40, b=50),
        font=dict(family="system-ui, Helvetica, Arial, sans-serif", size=12),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
        xaxis=dict(title=dict(text=x_title), automargin=True),
        yaxis=dict(title=dict(text=y_title), automargin=True),
    )


def department_hours_figure(departments: pl.DataFrame) -> go.Figure:
    """Horizontal bars per department: active and idle GPU-hours stacked, largest on top.

    Bars are keyed by position (tick text carries the label), so two departments with
    the same name never merge. Unmapped departments are hatched.
    """
    with_cluster = departments["cluster"].n_unique() > 1
    rows = departments.sort(["gpu_hours", "cluster", "department"], nulls_last=False)
    keys = [f"d{i}" for i in range(rows.height)]
    labels = [
        esc_plotly(department_label(d, c if with_cluster else None))
        for d, c in zip(rows["department"], rows["cluster"], strict=True)
    ]
    hatch = ["/" if d == UNMAPPED else "" for d in rows["department"]]
    fig = go.Figure()
    for column, name, color in (
        ("active_gpu_hours", "active", ACTIVE_COLOR),
        ("idle_gpu_hours", "idle", IDLE_COLOR),
    ):
        fig.add_trace(
            go.Bar(
                y=keys,
                x=rows[column].fill_null(0.0).to_list(),
                orientation="h",
                name=name,
                marker=dict(color=color, pattern=dict(shape=hatch, fgcolor="#333")),
                customdata=labels,
                hovertemplate=f"%{{customdata}}<br>{name}: %{{x:,.1f}} GPU-hours<extra></extra>",
            )
        )
    fig.update_layout(**base_layout(max(260, 90 + 26 * rows.height), "GPU-hours"))
    fig.update_layout(barmode="stack", legend_traceorder="normal")
    fig.update_yaxes(tickmode="array", tickvals=keys, ticktext=labels)
    return fig


def utilization_bins(jobs: pl.DataFrame, bin_pct: int = 5) -> pl.DataFrame:
    """GPU-hours per cluster and utilization bin (jobs with null utilization left out).

    Returns ``cluster, bin_start (percent, lower edge), gpu_hours``; 100% falls in the
    last bin.
    """
    if 100 % bin_pct:
        raise ValueError("bin_pct must divide 100")
    top = 100 - bin_pct
    return (
        jobs.filter(pl.col("utilization").is_not_null())
        .with_columns(
            ((pl.col("utilization") * 100 / bin_pct).floor() * bin_pct).clip(0, top).cast(pl.Int32).alias("bin_start")
        )
        .group_by("cluster", "bin_start")
        .agg(pl.col("gpu_hours").sum())
        .sort("cluster", "bin_start")
    )


def utilization_histogram_figure(jobs: pl.DataFrame, bin_pct: int = 5) -> go.Figure:
    """Distribution of job utilization weighted by GPU-hours, one stacked trace per cluster."""
    bins = utilization_bins(jobs, bin_pct)
    fig = go.Figure()
    clusters = bins["cluster"].unique(maintain_order=True).to_list()
    for index, cluster in enumerate(clusters):
        part = bins.filter(pl.col("cluster") == cluster)
        fig.add_trace(
            go.Bar(
                x=[start + bin_pct / 2 for start in part["bin_start"]],
                y=part["gpu_hours"].to_list(),
                width=bin_pct,
                name=esc_plotly(cluster),
                marker=dict(color=CLUSTER_COLORS[index % len(CLUSTER_COLORS)]),
                customdata=[[s, s + bin_pct] for s in part["bin_start"]],
                hovertemplate=(
                    f"{esc_plotly(cluster)}<br>utilization %{{customdata[0]}}-"
                    "%{customdata[1]}%<br>%{y:,.1f} GPU-hours<extra></extra>"
                ),
            )
        )
    fig.update_layout(**base_layout(360, "job utilization (%)", "GPU-hours"))
    fig.update_layout(barmode="stack", bargap=0, showlegend=len(clusters) > 1)
    fig.update_xaxes(range=[0, 100], dtick=10)
    return fig
