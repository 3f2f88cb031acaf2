"""The review's "Downtime and availability" section: per cluster, the month's capacity in each
state of contracts/capacity_states.py and its availability (capacity not down or planned down);
per node, state and reason, the downtime intervals the sources reported. Only when the month has
capacity split rows. Every cell is escaped by the template."""

from __future__ import annotations

from functools import partial

import polars as pl

from contracts.capacity_states import PLATFORM_STATES, STATES
from reports.html import Column, Section, fmt_datetime, fmt_float, fmt_int, fmt_pct, table

fmt_one = partial(fmt_float, decimals=1)
SHOWN_INTERVALS = 100  # node x state x reason rows listed, most hours first


def availability_frame(states: pl.DataFrame) -> pl.DataFrame:
    """``states``: per cluster, capacity_gpu_hours and ``<state>_gpu_hours`` for every state; adds
    ``availability`` = 1 - (down + planned down) / capacity."""
    platform = pl.sum_horizontal([f"{state}_gpu_hours" for state in PLATFORM_STATES])
    capacity = pl.col("capacity_gpu_hours")
    return states.with_columns(availability=pl.when(capacity > 0).then(1 - platform / capacity))


def downtime_by_node(intervals: pl.DataFrame) -> pl.DataFrame:
    """Per cluster, node, GPU ("all": the whole node), state, reason and source: intervals, their
    hours (of the node, or of the one GPU), first start, last end, who set them; most hours first."""
    hours = (pl.col("end_ts") - pl.col("start_ts")).dt.total_seconds() / 3600
    gpus = pl.when(pl.col("gpu").is_null()).then(pl.lit("all")).otherwise(pl.col("gpu").cast(pl.String)).alias("gpus")
    by_node = intervals.group_by("cluster", "hostname", gpus, "state", "reason", "source").agg(
        pl.len().alias("intervals"),
        hours.sum().alias("hours"),
        pl.col("start_ts").min().alias("first_start"),
        pl.col("end_ts").max().alias("last_end"),
        pl.col("reported_by").filter(pl.col("reported_by") != "").unique().sort().str.join(", ").alias("reported_by"),
    )
    return by_node.sort(["hours", "cluster", "hostname", "gpus", "state", "reason"], descending=[True, *[False] * 5])


def downtime_section(states: pl.DataFrame, intervals: pl.DataFrame) -> Section | None:
    if states.is_empty():
        return None
    availability = availability_frame(states).sort("cluster")
    state_columns = [
        Column(f"{state}_gpu_hours", f"{state.replace('_', ' ')} GPU-hours", fmt_one, True) for state in STATES
    ]
    cluster_columns = [
        Column("cluster", "cluster"),
        Column("capacity_gpu_hours", "capacity GPU-hours", fmt_one, True),
        *state_columns,
        Column("availability", "availability (%)", fmt_pct, True),
    ]
    nodes = downtime_by_node(intervals)
    node_columns = [
        Column("cluster", "cluster"),
        Column("hostname", "node"),
        Column("gpus", "GPU"),
        Column("state", "state"),
        Column("reason", "reason", wrap=True),
        Column("reported_by", "set by"),
        Column("source", "source"),
        Column("intervals", "intervals", fmt_int, True),
        Column("hours", "hours", fmt_one, True),
        Column("first_start", "first start", fmt_datetime),
        Column("last_end", "last end", fmt_datetime),
    ]
    values = {
        "clusters": table(availability, cluster_columns),
        "nodes": table(nodes.head(SHOWN_INTERVALS), node_columns),
        "more_nodes": max(nodes.height - SHOWN_INTERVALS, 0),
    }
    return Section("downtime", "Downtime and availability", "sections/downtime.html", values)
