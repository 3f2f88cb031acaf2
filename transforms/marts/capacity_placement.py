"""Where in an hour a GPU's allocation was held, for the capacity split: by the runs' own times.

``marts.fct_gpu_hourly`` gives each GPU-hour its allocated seconds, not when in the hour they
were held. The runs say when: a Slurm run holds gpus / its host count on each of its hosts from
start to end, a Kubernetes pod its GPUs on its node. A GPU's allocated seconds are shared over
the segments of its hour (cut at the downtime intervals' bounds) in proportion to the GPU-seconds
the runs held on its host in each segment, so allocation inside a drain, a reservation or a
maintenance window is counted there, and allocation in up time takes idle time.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

HELD: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "run_start": pl.Datetime("us"),
    "run_end": pl.Datetime("us"),
    "host_gpus": pl.Float64(),
}


def _window(start: pl.Expr, end: pl.Expr, period_start: datetime, period_end: datetime) -> list[pl.Expr]:
    return [
        pl.max_horizontal(start, pl.lit(period_start)).alias("run_start"),
        pl.min_horizontal(end.fill_null(period_end), pl.lit(period_end)).alias("run_end"),
    ]


def host_runs(
    jobs: pl.DataFrame, pods: pl.DataFrame | None, period_start: datetime, period_end: datetime
) -> pl.DataFrame:
    """``HELD`` rows: per run (``stg_slurm__jobs``: hosts, gpus, start/end) and host, and per pod
    (``stg_kube__pods``: node, gpus, start/end), the GPUs held on the host and when (clipped to
    the period; an open run or pod to its end)."""
    started = jobs.filter(pl.col("start_time").is_not_null() & (pl.col("hosts").list.len() > 0))
    slurm = (
        started.select(
            "cluster",
            pl.col("hosts").alias("hostname"),
            *_window(pl.col("start_time"), pl.col("end_time"), period_start, period_end),
            host_gpus=pl.col("gpus") / pl.col("hosts").list.len(),
        )
        .explode("hostname")
        .select(list(HELD))
    )
    frames = [slurm.cast(HELD)]
    if pods is not None and not pods.is_empty():
        placed = pods.filter(pl.col("start_time").is_not_null() & pl.col("node").is_not_null())
        frames.append(
            placed.select(
                "cluster",
                pl.col("node").alias("hostname"),
                *_window(pl.col("start_time"), pl.col("end_time"), period_start, period_end),
                host_gpus=pl.col("gpus"),
            ).cast(HELD)
        )
    return pl.concat(frames).filter(pl.col("run_end") > pl.col("run_start"))


def _held(spans: pl.DataFrame, held: pl.DataFrame, begin: str, end: str, keys: list[str]) -> pl.DataFrame:
    """Per ``keys``: the GPU-seconds the host's runs held inside [begin, end) of each span."""
    joined = spans.join(held, on=["cluster", "hostname"]).filter(
        (pl.col("run_start") < pl.col(end)) & (pl.col("run_end") > pl.col(begin))
    )
    overlap = pl.min_horizontal("run_end", end) - pl.max_horizontal("run_start", begin)
    return joined.group_by(keys).agg((overlap.dt.total_microseconds() / 1e6 * pl.col("host_gpus")).sum().alias("_h"))


def allocation_in_states(rows: pl.DataFrame, segments: pl.DataFrame, held: pl.DataFrame) -> pl.DataFrame:
    """Per ``_row`` and ``rank``: the row's allocated seconds held inside the segments of that
    interval state, shared by the host's held GPU-seconds per segment over those of the hour.
    ``rows``: ``_row``, cluster, hostname, hour, allocated_seconds; ``segments``: ``_row``, p, q, rank."""
    keyed = segments.join(rows.select("_row", "cluster", "hostname", "hour", "allocated_seconds"), on="_row")
    in_segment = _held(keyed, held, "p", "q", ["_row", "p", "rank"])
    hours = (
        keyed.select("_row", "cluster", "hostname", "hour")
        .unique()
        .with_columns(_end=pl.col("hour") + pl.duration(hours=1))
    )
    in_hour = _held(hours, held, "hour", "_end", ["_row"]).rename({"_h": "_hour"})
    share = in_segment.join(in_hour, on="_row").join(rows.select("_row", "allocated_seconds"), on="_row")
    placed = share.with_columns(
        _alloc=pl.when(pl.col("_hour") > 0)
        .then(pl.col("allocated_seconds") * pl.col("_h") / pl.col("_hour"))
        .otherwise(0.0)
    )
    return placed.group_by("_row", "rank").agg(pl.col("_alloc").sum())
