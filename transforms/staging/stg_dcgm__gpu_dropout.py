"""staging.stg_dcgm__gpu_dropout: GPUs whose DCGM series stopped while their host's other GPUs
still reported (fallen off the bus, lost by the driver), as downtime intervals.

From the day's ``raw.dcgm_samples`` (which GPU reported at which scrape of its host): columns
``contracts.capacity_states.DOWNTIME_INTERVAL``, one row per interval of one GPU, state ``down``,
``source`` = ``dcgm_dropout``, reason ``no samples while the host reported``.

dcgm-exporter reports every GPU of a host in each scrape, all at the scrape's time. A GPU of the
host (one it reported that day, or one the config declares on it) with no sample at one of the
host's scrape times is missing from that scrape until the host's next one (at most one step).
A GPU's missing scrapes, merged, are a dropout when they last at least ``MIN_MISSED_SCRAPES``
steps (a single lost sample is a data-quality matter, not downtime). A host with no sample at
all (its exporter down, the node off) has no dropout: that is the other sources' to say. A MIG
card counts as reporting when any of its instances or its device row does. Intervals end at the
day's end at the latest (clipped), and start at the first missing scrape: a GPU declared but not
reported all day on a reporting host is down all day.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from contracts.capacity_states import DCGM_DROPOUT, DOWN, DOWNTIME_INTERVAL
from transforms.helpers.intervals import clip_intervals, merge_intervals

SCHEMA = DOWNTIME_INTERVAL
SOURCE = DCGM_DROPOUT
REASON = "no samples while the host reported"
MIN_MISSED_SCRAPES = 2
# The (hostname, gpu, ts) of a cluster's day in raw.dcgm_samples; parameters: cluster, day.
PRESENT_SQL = "SELECT DISTINCT hostname, gpu, ts FROM raw.dcgm_samples WHERE cluster = ? AND day = ?"


def stg_dcgm__gpu_dropout(
    present: pl.DataFrame, declared: pl.DataFrame, cluster: str, start: datetime, end: datetime, step_seconds: int
) -> pl.DataFrame:
    """Rows in SCHEMA for ``[start, end)``; ``present``: ``hostname, gpu, ts`` with a sample;
    ``declared``: the config's inventory (its cards of ``cluster`` are added to the reported ones)."""
    present = present.select("hostname", pl.col("gpu").cast(pl.Int16), pl.col("ts").cast(pl.Datetime("us"))).unique()
    step = timedelta(seconds=step_seconds)
    scrapes = (
        present.select("hostname", "ts")
        .unique()
        .sort("hostname", "ts")
        .with_columns(_next=pl.col("ts").shift(-1).over("hostname"))
    )
    declared_cards = declared.filter(pl.col("cluster") == cluster).select("hostname", pl.col("gpu").cast(pl.Int16))
    cards = pl.concat([present.select("hostname", "gpu"), declared_cards]).unique()
    cards = cards.join(scrapes.select("hostname").unique(), on="hostname", how="semi")
    missing = scrapes.join(cards, on="hostname").join(present, on=["hostname", "gpu", "ts"], how="anti")
    until = pl.min_horizontal(pl.col("_next").fill_null(pl.col("ts") + step), pl.col("ts") + step)
    intervals = missing.select("hostname", "gpu", pl.col("ts").alias("start_ts"), until.alias("end_ts"))
    merged = merge_intervals(intervals, ["hostname", "gpu"])
    long_enough = (pl.col("end_ts") - pl.col("start_ts")) >= MIN_MISSED_SCRAPES * step
    rows = merged.filter(long_enough).with_columns(
        cluster=pl.lit(cluster),
        state=pl.lit(DOWN),
        reason=pl.lit(REASON),
        reported_by=pl.lit(""),
        source=pl.lit(SOURCE),
    )
    return clip_intervals(rows.select(list(SCHEMA)).cast(SCHEMA), start, end).sort(
        "cluster", "hostname", "gpu", "start_ts"
    )
