"""Ground truth of capacity: per Slurm host and UTC hour of the window, the GPU-hours that
existed, were allocated, were down (a drained node) and idle (``truth_capacity.parquet``).

- ``capacity_gpu_hours``: each GPU or MIG instance while it existed (a re-partition ends some
  instances and starts others: simulate/node_events.py), a MIG instance at its compute slices
  / 7, a whole GPU at 1;
- ``allocated_gpu_hours``: the runs' instances while held, at the same fractions;
- ``down_gpu_hours``: capacity inside a drain interval (no job runs there);
- ``idle_gpu_hours``: capacity - allocated - down.

The Kubernetes pool (``--kube``) is not in it: its truth is ``truth_pods.parquet``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from simulate.hardware import mig_fraction
from simulate.node_events import NodeEvents

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "hour": pl.Datetime("us"),
    "capacity_gpu_hours": pl.Float64(),
    "allocated_gpu_hours": pl.Float64(),
    "down_gpu_hours": pl.Float64(),
    "idle_gpu_hours": pl.Float64(),
}
_INSTANCE = ["hostname", "gpu", "gpu_i_id"]


def _fraction(inventory: pl.DataFrame) -> pl.Expr:
    """A whole GPU 1, a MIG instance its ``mig_fraction``."""
    profiles = inventory.get_column("gpu_i_profile").drop_nulls().unique().to_list()
    fractions = {profile: mig_fraction(profile) for profile in profiles}
    return pl.col("gpu_i_profile").replace_strict(fractions, default=1.0, return_dtype=pl.Float64)


def _hours_of(frame: pl.DataFrame, start: str, end: str) -> pl.DataFrame:
    """Each row x each hour it overlaps, with ``_seconds`` of the overlap."""
    hour = pl.col("hour")
    overlap = pl.min_horizontal(pl.col(end), hour + pl.duration(hours=1)) - pl.max_horizontal(pl.col(start), hour)
    return (
        frame.filter(pl.col(end) > pl.col(start))
        .with_columns(
            hour=pl.datetime_ranges(pl.col(start).dt.truncate("1h"), pl.col(end) - pl.duration(microseconds=1), "1h")
        )
        .explode("hour")
        .with_columns(_seconds=overlap.dt.total_microseconds() / 1e6)
    )


def _existence(inventory: pl.DataFrame, windows: pl.DataFrame, start: datetime, end: datetime) -> pl.DataFrame:
    rows = inventory.join(windows, on=["hostname", "gpu_i_id"], how="left", nulls_equal=False)
    return rows.select(
        *_INSTANCE,
        _fraction(inventory).alias("fraction"),
        pl.max_horizontal(pl.col("valid_from").fill_null(start), pl.lit(start)).alias("since"),
        pl.min_horizontal(pl.col("valid_until").fill_null(end), pl.lit(end)).alias("until"),
    )


def _per_host_hour(frame: pl.DataFrame, name: str) -> pl.DataFrame:
    return frame.group_by("hostname", "hour").agg(((pl.col("_seconds") * pl.col("fraction")).sum() / 3600).alias(name))


def capacity_truth(
    inventory: pl.DataFrame,
    windows: pl.DataFrame,
    allocations: pl.DataFrame,
    events: NodeEvents,
    cluster: str,
    start: datetime,
    days: int,
) -> pl.DataFrame:
    """SCHEMA rows for every host x hour of [start, start + days). ``inventory``: the Slurm
    hosts' instances (hostname, gpu, gpu_i_id, gpu_i_profile); ``windows``:
    ``node_events.instance_windows``; ``allocations``: ``truth.allocations_frame``."""
    end = start + timedelta(days=days)
    existence = _existence(inventory, windows, start, end)
    capacity = _per_host_hour(_hours_of(existence, "since", "until"), "capacity_gpu_hours")
    held = allocations.join(existence.select(*_INSTANCE, "fraction"), on=_INSTANCE, nulls_equal=True).with_columns(
        run_start=pl.max_horizontal("start_time", pl.lit(start)), run_end=pl.min_horizontal("end_time", pl.lit(end))
    )
    allocated = _per_host_hour(_hours_of(held, "run_start", "run_end"), "allocated_gpu_hours")
    drains = pl.DataFrame(
        [(d.hostname, d.start, d.end) for d in events.drains],
        schema={"hostname": pl.String(), "d_start": pl.Datetime("us"), "d_end": pl.Datetime("us")},
        orient="row",
    )
    in_drain = (
        existence.join(drains, on="hostname")
        .with_columns(
            d_start=pl.max_horizontal("d_start", "since"),
            d_end=pl.min_horizontal("d_end", "until"),
        )
        .pipe(_hours_of, "d_start", "d_end")
    )
    down = _per_host_hour(in_drain, "down_gpu_hours")
    out = (
        capacity.join(allocated, on=["hostname", "hour"], how="left")
        .join(down, on=["hostname", "hour"], how="left")
        .with_columns(pl.col("allocated_gpu_hours", "down_gpu_hours").fill_null(0.0), cluster=pl.lit(cluster))
        .with_columns(
            idle_gpu_hours=pl.col("capacity_gpu_hours") - pl.col("allocated_gpu_hours") - pl.col("down_gpu_hours")
        )
    )
    return out.select(list(SCHEMA)).cast(SCHEMA).sort("hostname", "hour")
