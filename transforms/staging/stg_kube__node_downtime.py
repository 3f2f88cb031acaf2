"""staging.stg_kube__node_downtime: Kubernetes nodes down or cordoned, as downtime intervals.

From ``raw.kube_node_runs``; columns ``contracts.capacity_states.DOWNTIME_INTERVAL`` (one row
per interval of a whole node: ``gpu`` null), ``source`` = ``kube_node_condition``, state
``down``:

- ``kube_node_status_condition{condition="Ready",status="true"}`` = 0: the node is not Ready
  (reason ``NotReady``);
- ``kube_node_spec_unschedulable`` = 1: the node is cordoned (reason ``cordoned``).

A run stands for its samples' time ``[first_ts, last_ts + step)``, so an interval starts at the
first scrape that saw the node down and ends at the first that saw it up again (each end late
by less than one step, the length right on average). Overlapping or touching intervals of one
node and reason are merged; a NotReady node that is also cordoned has both intervals (the
capacity split counts a GPU-second once). Intervals are clipped to the day. ``reported_by`` is
empty: kube-state-metrics does not say who cordoned a node.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from contracts.capacity_states import DOWN, DOWNTIME_INTERVAL, KUBE_NODE_CONDITION
from transforms.helpers.intervals import clip_intervals, merge_intervals

SCHEMA = DOWNTIME_INTERVAL
SOURCE = KUBE_NODE_CONDITION
NOT_READY, CORDONED = "NotReady", "cordoned"


def stg_kube__node_downtime(
    runs: pl.DataFrame,
    start: datetime,
    end: datetime,
    step_seconds: int,
    *,
    condition_metric: str,
    unschedulable_metric: str,
) -> pl.DataFrame:
    """Rows in SCHEMA for ``[start, end)`` from ``raw.kube_node_runs`` rows."""
    labels = pl.col("labels")
    ready_true = (
        (pl.col("metric") == condition_metric)
        & (labels.str.json_path_match("$.condition") == "Ready")
        & (labels.str.json_path_match("$.status") == "true")
    )
    not_ready = ready_true & (pl.col("value") == 0)
    cordoned = (pl.col("metric") == unschedulable_metric) & (pl.col("value") == 1)
    down = runs.filter(not_ready | cordoned).select(
        "cluster",
        pl.col("node").alias("hostname"),
        pl.lit(None, pl.Int16).alias("gpu"),
        pl.lit(DOWN).alias("state"),
        pl.col("first_ts").alias("start_ts"),
        (pl.col("last_ts") + timedelta(seconds=step_seconds)).alias("end_ts"),
        pl.when(cordoned).then(pl.lit(CORDONED)).otherwise(pl.lit(NOT_READY)).alias("reason"),
        pl.lit("").alias("reported_by"),
        pl.lit(SOURCE).alias("source"),
    )
    clipped = clip_intervals(down.cast(SCHEMA), start, end)
    return merge_intervals(clipped, ["cluster", "hostname", "reason"]).sort("cluster", "hostname", "start_ts", "reason")
