"""staging.stg_dcgm__gpu_xid: GPUs whose last XID error is a critical one (contracts/xid.py), as
downtime intervals.

From the day's XID points (``sources.dcgm_xid.XID_VALUES``: the gauge ``DCGM_FI_DEV_XID_ERRORS``,
the last XID the driver logged for the GPU, sticky until the driver reloads) and the GPU's hours
with real activity: columns ``contracts.capacity_states.DOWNTIME_INTERVAL``, state ``down``,
``source`` = ``dcgm_xid``, reason the XID's (``XID 79: GPU has fallen off the bus``).

The rule, per GPU (a MIG card's instances share their card's XID):

- A point holds its value until the next point, for at most ``HOLD_STEPS`` steps (a scrape may
  come late: timestamps jitter). A run of points with the same critical XID, without a gap, is
  one interval; a change to another critical XID starts a new interval with the new reason.
- The interval ends at the first point that is not critical: 0 (the driver reloaded, the GPU
  was reset) or an informational XID; the Prometheus read leaves those out, so a gap ends it.
- Or at the first hour with real activity that starts after the XID came (``ACTIVE_MEAN`` of
  the hour's best activity signal): the GPU works, so the sticky value no longer means it is
  down. The rest of that XID on the GPU in the day (gaps too: the read cannot tell a reset from
  a missed scrape) is not downtime; a later change to another critical XID is.
- A critical value carried into the day (its first point within a hold of the day's start)
  continues the previous day's interval: it is down from the day's start only when the previous
  day's partition has an interval of that GPU that ran to the day's end (``carried``);
  otherwise the GPU worked or was reset since, and the sticky value is not downtime. With no
  previous day's partition (the first day landed, or a day landed before the one before it),
  the day is judged alone: down from its start until the first active hour or a reset.

Values that are no XID (NaN, negative, fractional) and points whose ``gpu`` label is not a GPU
index are not used (a value holds the one just before it, never across a gap) and are
quarantined with a reason.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from contracts.capacity_states import DCGM_XID, DOWN, DOWNTIME_INTERVAL
from contracts.schemas import QUARANTINE_SCHEMA
from contracts.xid import CRITICAL_XIDS
from transforms.helpers.intervals import clip_intervals

SCHEMA = DOWNTIME_INTERVAL
SOURCE = DCGM_XID
ACTIVE_MEAN = 0.05  # an hour's mean of its best activity signal (as a 0-1 ratio) at or above this is real work
HOLD_STEPS = 1.5  # a point holds its value this many sample steps at most (a late scrape is no gap)
UNREADABLE_VALUE, UNREADABLE_GPU = "XID_NOT_A_CODE", "XID_GPU_LABEL"
# Per GPU and hour of a cluster's day, the best activity signal's mean as a 0-1 ratio
# (staging.stg_dcgm__gpu_hourly; MIG instances: their busiest); parameters: cluster, day, threshold.
ACTIVE_HOURS_SQL = """
SELECT hostname, gpu, hour
FROM staging.stg_dcgm__gpu_hourly
WHERE cluster = ? AND day = ?
GROUP BY hostname, gpu, hour
HAVING max(coalesce(sm_active_sum / nullif(sm_active_n, 0), gr_engine_active_sum / nullif(gr_engine_active_n, 0),
                    gpu_util_sum / nullif(gpu_util_n, 0) / 100)) >= ?
"""

# The previous day's intervals that ran to its end (a value carried into the day continues them);
# parameters: cluster, previous day, the day's start.
CARRIED_SQL = """
SELECT hostname, gpu, reason FROM staging.stg_dcgm__gpu_xid WHERE cluster = ? AND day = ? AND end_ts = ?
"""


def screen_xid(values: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(``hostname, gpu (Int16), ts, code (Int64, null: not a code)``, the rejected points with a
    ``problem``): a gpu label that is not an index drops the point, a value that is no XID keeps
    the point with a null code."""
    gpu = pl.col("gpu").str.strip_chars().cast(pl.Int16, strict=False)
    value = pl.col("value")
    is_code = value.is_finite() & (value >= 0) & (value == value.floor())
    typed = values.with_columns(_gpu=gpu, _ok=is_code.fill_null(False))
    problem = (
        pl.when(pl.col("_gpu").is_null() | pl.col("hostname").is_null())
        .then(pl.lit(UNREADABLE_GPU))
        .when(~pl.col("_ok"))
        .then(pl.lit(UNREADABLE_VALUE))
    )
    typed = typed.with_columns(problem=problem)
    bad = typed.filter(pl.col("problem").is_not_null()).select("hostname", "gpu", "ts", "value", "problem")
    kept = typed.filter(pl.col("problem").is_null() | (pl.col("problem") == UNREADABLE_VALUE))
    code = pl.when(pl.col("_ok")).then(value.cast(pl.Int64, strict=False))
    return kept.select("hostname", pl.col("_gpu").alias("gpu"), "ts", code.alias("code")), bad


def quarantine_xid(bad: pl.DataFrame, cluster: str, source: str, partition_key: str) -> pl.DataFrame:
    """``QUARANTINE_SCHEMA`` rows: one per GPU series and problem, with the points it stands for."""
    if bad.is_empty():
        return pl.DataFrame(schema=QUARANTINE_SCHEMA)
    reasons = {
        UNREADABLE_GPU: f"{UNREADABLE_GPU}: the series' gpu or host label is missing or not a GPU index",
        UNREADABLE_VALUE: f"{UNREADABLE_VALUE}: the XID value is not a non-negative whole number",
    }
    groups = bad.group_by("hostname", "gpu", "problem").agg(
        pl.col("ts").min().alias("first"), pl.col("value").sort_by("ts").first().alias("example"), pl.len()
    )
    rows = groups.select(
        cluster=pl.lit(cluster),
        source=pl.lit(source),
        partition_key=pl.lit(partition_key),
        location=pl.concat_str(
            pl.lit("DCGM_FI_DEV_XID_ERRORS{Hostname="),
            pl.col("hostname").fill_null("(none)"),
            pl.lit(", gpu="),
            pl.col("gpu").fill_null("(none)"),
            pl.lit("}"),
        ),
        reason=pl.col("problem").replace_strict(reasons),
        payload=pl.concat_str(
            pl.lit('{"example_value": "'),
            pl.col("example").cast(pl.String),
            pl.lit('", "first_ts": "'),
            pl.col("first").cast(pl.String),
            pl.lit('"}'),
        ),
        n_rows=pl.col("len").cast(pl.Int64),
    )
    return rows.cast(QUARANTINE_SCHEMA).sort("location", "reason")


def critical_runs(codes: pl.DataFrame, step_seconds: int) -> pl.DataFrame:
    """``hostname, gpu, code, start_ts, end_ts``: each run of one critical XID, points merged."""
    step = timedelta(seconds=step_seconds)
    hold = timedelta(seconds=step_seconds * HOLD_STEPS)
    key = ["hostname", "gpu"]
    # a point that is no XID holds the value before it, across no gap (a gap is a value left out)
    apart = ((pl.col("ts") - pl.col("ts").shift()) > hold).fill_null(True).cast(pl.Int64).cum_sum().over(key)
    points = (
        codes.group_by(*key, "ts")
        .agg(pl.col("code").max())
        .sort(*key, "ts")
        .with_columns(_stretch=apart)
        .with_columns(pl.col("code").forward_fill().over(*key, "_stretch"))
        .filter(pl.col("code").is_not_null())
        .with_columns(_next=pl.col("ts").shift(-1).over(key))
    )
    until = pl.when(pl.col("_next") - pl.col("ts") <= hold).then(pl.col("_next")).otherwise(pl.col("ts") + step)
    pieces = points.select("hostname", "gpu", "code", pl.col("ts").alias("start_ts"), until.alias("end_ts"))
    critical = pieces.filter(pl.col("code").is_in(list(CRITICAL_XIDS)))
    opened = (pl.col("code") != pl.col("code").shift()) | (pl.col("start_ts") > pl.col("end_ts").shift())
    run = opened.fill_null(True).cast(pl.Int64).cum_sum().over(key)
    return (
        critical.sort(*key, "start_ts")
        .with_columns(_run=run)
        .group_by(*key, "_run", maintain_order=True)
        .agg(pl.col("code").first(), pl.col("start_ts").min(), pl.col("end_ts").max())
        .drop("_run")
    )


def _stretches(runs: pl.DataFrame) -> pl.DataFrame:
    """The runs with ``_stretch``: per GPU, consecutive runs of one XID (across gaps) share one,
    and ``_from``: when the stretch's XID came (its first run's start)."""
    key = ["hostname", "gpu"]
    changed = (pl.col("code") != pl.col("code").shift()).fill_null(True).cast(pl.Int64).cum_sum().over(key)
    ordered = runs.sort(*key, "start_ts").with_columns(_stretch=changed)
    return ordered.with_columns(_from=pl.col("start_ts").min().over(*key, "_stretch"))


def until_active(runs: pl.DataFrame, active_hours: pl.DataFrame) -> pl.DataFrame:
    """The runs cut at the first active hour of their GPU that starts at or after their XID came
    (``_stretches``); a run wholly after it is dropped."""
    hours = active_hours.select("hostname", pl.col("gpu").cast(pl.Int16), pl.col("hour").cast(pl.Datetime("us")))
    stretched = _stretches(runs)
    firsts = (
        stretched.select("hostname", "gpu", "_stretch", "_from")
        .unique()
        .join(hours, on=["hostname", "gpu"], how="inner")
        .filter(pl.col("hour") >= pl.col("_from"))
        .group_by("hostname", "gpu", "_stretch")
        .agg(pl.col("hour").min().alias("_active"))
    )
    ended = stretched.join(firsts, on=["hostname", "gpu", "_stretch"], how="left")
    cut = ended.with_columns(end_ts=pl.min_horizontal("end_ts", "_active"))
    return cut.filter(pl.col("end_ts") > pl.col("start_ts")).drop("_stretch", "_from", "_active")


def carried_over(runs: pl.DataFrame, carried: pl.DataFrame | None, start: datetime, step_seconds: int) -> pl.DataFrame:
    """The runs with a critical value carried into the day (first point within a hold of
    ``start``): kept from ``start`` when the GPU was down at the previous day's end (``carried``:
    hostname, gpu of its intervals that ran to its end; the same XID continues, another one came
    at midnight), dropped otherwise (a sticky value the GPU worked through, or was reset since);
    every run as is when ``carried`` is None (no previous day to judge by)."""
    if carried is None:
        return runs
    hold = timedelta(seconds=step_seconds * HOLD_STEPS)
    stretched = _stretches(runs)
    first = stretched.filter(pl.col("_stretch") == 1)
    at_start = first.filter(pl.col("_from") <= pl.lit(start) + hold)
    known = carried.select("hostname", pl.col("gpu").cast(pl.Int16)).unique()
    kept = at_start.join(known, on=["hostname", "gpu"], how="semi")
    kept = kept.with_columns(start_ts=pl.min_horizontal("start_ts", pl.lit(start)))
    rest = stretched.join(
        at_start.select("hostname", "gpu", "_stretch"), on=["hostname", "gpu", "_stretch"], how="anti"
    )
    return pl.concat([rest, kept]).drop("_stretch", "_from").sort("hostname", "gpu", "start_ts")


def stg_dcgm__gpu_xid(
    codes: pl.DataFrame,
    active_hours: pl.DataFrame,
    cluster: str,
    start: datetime,
    end: datetime,
    step_seconds: int,
    carried: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Rows in SCHEMA for ``[start, end)``; ``codes`` from ``screen_xid``, ``active_hours``:
    ``hostname, gpu, hour`` of the hours with real activity (``ACTIVE_HOURS_SQL``); ``carried``:
    ``hostname, gpu, reason`` of the previous day's intervals that ran to its end (``CARRIED_SQL``;
    None: no previous day's partition)."""
    codes = codes.with_columns(pl.col("gpu").cast(pl.Int16), pl.col("ts").cast(pl.Datetime("us")))
    runs = critical_runs(codes, step_seconds)
    runs = until_active(carried_over(runs, carried, start, step_seconds), active_hours)
    rows = runs.with_columns(
        cluster=pl.lit(cluster),
        state=pl.lit(DOWN),
        reason=pl.col("code").replace_strict(CRITICAL_XIDS, return_dtype=pl.String),
        reported_by=pl.lit(""),
        source=pl.lit(SOURCE),
    )
    return clip_intervals(rows.select(list(SCHEMA)).cast(SCHEMA), start, end).sort(
        "cluster", "hostname", "gpu", "start_ts"
    )
