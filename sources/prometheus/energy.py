"""The energy counter under server-side downsampling: read raw, placed exactly on the step rows.

The ``energy_mj`` signal is a counter (mJ since boot: contracts.signals). The hourly rollup
(``transforms.staging.stg_dcgm__gpu_hourly``) charges each reading's increase over the GPU
instance's previous reading, in time order over all of the instance's series, to the
reading's job. A downsampled read has one row per series and step bucket, stamped with the
bucket start, so when ``hpc_job`` changes inside a bucket the ending and the starting
job's rows share a timestamp: the rollup then takes their counter values in arbitrary
order, and a series that has readings both before and after another one inside the bucket
(the idle series around a job shorter than the step) cannot be represented by one reading
at all. ``last_over_time`` per bucket therefore mis-charges energy, and its "drops" look
like counter resets that add the whole since-boot counter to a job.

So the counter is never downsampled: :func:`place_energy` takes its raw readings (read like
in a raw read) and puts on the step rows the readings that give the rollup exactly the
increases the raw readings give, without adding rows where nothing changes:

- Per GPU instance (``uuid`` and ``gpu_i_id``, or ``hostname, gpu, gpu_i_id`` without a
  ``uuid``: how screening names a GPU) the readings are cut into *segments*: runs of
  consecutive readings carried by the same set of logical series (a logical series is a
  job's, or the idle, series: the instance plus ``hpc_job``, ``pod``, ``namespace``,
  ``container``, so that restart duplicates under another ``Hostname`` count once and
  jobs sharing a GPU are one set), cut at bucket edges and around every counter drop
  (a reset: the readings on both sides end segments, so the rollup sees the drop).
- A bucket of an instance with one segment is the plain case: each series keeps its row at
  the bucket start, with the segment's last reading (what ``last_over_time`` gives).
- The instance's first segment in the read carries its first reading instead: the rollup
  charges nothing to a frame's first reading, so the next row then counts from it, as the
  raw readings would.
- A bucket with several segments (a job change, a reset) has its rows moved from the
  bucket start to the end of each series' last segment in the bucket (its last reading,
  still inside the bucket: the hour does not change for steps that divide an hour; with a
  step longer than a minute the row can land in a later minute of its bucket), and each
  of a series' earlier segments there (only when the series has readings on both sides of
  another one, or around a reset) adds one row with only the energy reading at that
  segment's end.

The rollup then sees readings in their true order, each ending a stretch of time that
belongs to its row's job: per job and per hour (for steps that divide an hour) the energy
is the raw read's. The cost: the counter is read at the scrape interval (1 of the 10 fields;
see docs/prometheus.md, "Downsampling"), and an extra energy-only row adds a sample to its
minute: where a series resumes after a job shorter than a step, or the counter resets.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from contracts.exporters import Exporter
from sources.prometheus import SAMPLES_SCHEMA, LongSamples
from sources.series_labels import normalize_series

ENERGY_FIELD = "energy_mj"
LOGICAL = ["hpc_job", "pod", "namespace", "container"]  # besides the instance: what a job's series is


def _ids(frame: pl.DataFrame, columns: list[str], name: str) -> pl.DataFrame:
    """``frame`` with an UInt32 id per distinct ``columns`` value (nulls equal)."""
    keys = frame.select(columns).unique(maintain_order=True).with_row_index(name)
    return frame.join(keys, on=columns, how="left", nulls_equal=True)


def place_energy(long: LongSamples, exporter: Exporter, start_us: int, step_us: int) -> LongSamples:
    """``long`` with raw energy readings replaced by readings on step rows (module doc); the
    other fields' points (stamped at their bucket start) moved with their row where a bucket
    has several segments. ``long.samples`` sorted by ``series_id, ts`` (as a read returns it);
    ``exporter`` maps its series to signals."""
    if long.series.is_empty():
        return long
    norm = normalize_series(long.series, exporter).with_columns(
        pl.col("uuid").alias("_uuid"),
        pl.when(pl.col("uuid").is_null()).then(pl.col("hostname")).alias("_host"),
        pl.when(pl.col("uuid").is_null()).then(pl.col("gpu")).alias("_gpu"),
    )
    norm = _ids(norm, ["_uuid", "_host", "_gpu", "gpu_i_id"], "_instance")
    norm = _ids(norm, ["_instance", *LOGICAL], "_logical").select("series_id", "field", "_instance", "_logical")
    energy_ids = norm.filter(pl.col("field") == ENERGY_FIELD)
    if energy_ids.is_empty():
        return long
    is_energy = pl.col("series_id").is_in(energy_ids.get_column("series_id").implode())
    energy = (
        long.samples.filter(is_energy)
        .join(energy_ids, on="series_id")
        .select("series_id", "_instance", "_logical", pl.col("ts").dt.epoch("us").alias("_ts"), "value")
    )
    points, buckets = _points(energy, start_us, step_us)
    # Energy series: their logical series' points, in the buckets they have readings in.
    read_in = energy.select(
        "series_id", "_logical", (start_us + (pl.col("_ts") - start_us) // step_us * step_us).alias("_bucket")
    ).unique()
    energy_points = read_in.join(points, on=["_logical", "_bucket"]).select("series_id", "_at", "value")
    # Other fields: moved with their row where the bucket holds several segments.
    others = long.samples.filter(~is_energy)
    if buckets.height:
        moving = norm.join(buckets, on="_logical").select("series_id", pl.col("_bucket").alias("_ts"), "_at")
        others = (
            others.with_columns(pl.col("ts").dt.epoch("us").alias("_ts"))
            .join(moving, on=["series_id", "_ts"], how="left", maintain_order="left")
            .select("series_id", pl.from_epoch(pl.coalesce("_at", "_ts"), time_unit="us").alias("ts"), "value")
        )
    placed = energy_points.select(
        pl.col("series_id").cast(pl.UInt32),
        pl.from_epoch("_at", time_unit="us").alias("ts"),
        pl.col("value").cast(pl.Float64),
    ).sort("series_id", "ts")
    # Series are disjoint between the two (each sorted by series_id, ts): merging on series_id is a full order.
    samples = (
        others.cast(SAMPLES_SCHEMA).set_sorted("series_id").merge_sorted(placed.set_sorted("series_id"), "series_id")
    )
    return LongSamples(long.series, samples)


def _points(energy: pl.DataFrame, start_us: int, step_us: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """From raw readings (``_instance, _logical, _ts, value``): the readings to place
    (``_logical, _bucket, _at, value``) and, per logical series and bucket with several
    segments, where its row moves (``_logical, _bucket, _at``)."""
    inst, logi, ts, value = (energy.get_column(c).to_numpy() for c in ("_instance", "_logical", "_ts", "value"))
    order = np.lexsort((logi, ts, inst))
    inst, logi, ts, value = inst[order], logi[order], ts[order], value[order]
    # One reading per logical series and time (restart duplicates carry the same one).
    new = np.ones(len(ts), bool)
    new[1:] = (inst[1:] != inst[:-1]) | (ts[1:] != ts[:-1]) | (logi[1:] != logi[:-1])
    if not new.all():
        starts = np.flatnonzero(new)
        value = np.maximum.reduceat(value, starts)
        inst, logi, ts = inst[starts], logi[starts], ts[starts]
    # The instance's timeline: per time (k), the logical series read (rows k_start[k]:k_start[k + 1]).
    first_of_k = np.ones(len(ts), bool)
    first_of_k[1:] = (inst[1:] != inst[:-1]) | (ts[1:] != ts[:-1])
    k_start = np.flatnonzero(first_of_k)
    k_of_row = np.cumsum(first_of_k) - 1
    n = np.diff(np.append(k_start, len(ts)))
    k_inst, k_ts = inst[k_start], ts[k_start]
    k_bucket = start_us + (k_ts - start_us) // step_us * step_us
    counter = np.maximum.reduceat(value, k_start)
    same_inst = np.zeros(len(k_start), bool)  # as the previous time
    same_inst[1:] = k_inst[1:] == k_inst[:-1]
    # Same set of logical series as at the previous time: as many, and row by row the same.
    same_n = same_inst.copy()
    same_n[1:] &= n[1:] == n[:-1]
    row_n = n[k_of_row]
    back = np.arange(len(ts)) - row_n
    row_same = same_n[k_of_row] & (back >= 0)
    row_same[row_same] = logi[row_same] == logi[back[row_same]]
    same_set = np.logical_and.reduceat(row_same, k_start)
    drop = np.zeros(len(k_start), bool)  # the counter fell from the previous time
    drop[1:] = same_inst[1:] & (counter[1:] < counter[:-1])
    end = np.ones(len(k_start), bool)  # segment ends
    end[:-1] = ~same_inst[1:] | (k_bucket[1:] != k_bucket[:-1]) | ~same_set[1:] | drop[1:]
    end |= drop
    ends = np.flatnonzero(end)
    # Segments per instance and bucket; an instance's first segment is read at its first time.
    group = np.ones(len(ends), bool)
    group[1:] = (k_inst[ends][1:] != k_inst[ends][:-1]) | (k_bucket[ends][1:] != k_bucket[ends][:-1])
    group_start = np.flatnonzero(group)
    segments = np.diff(np.append(group_start, len(ends)))[np.cumsum(group) - 1]
    first_end = np.ones(len(ends), bool)
    first_end[1:] = k_inst[ends][1:] != k_inst[ends][:-1]
    first_k = np.maximum.accumulate(np.where(~same_inst, np.arange(len(k_start)), 0))  # the instance's first time
    read_k = np.where(first_end, first_k[ends], ends)
    # Every logical series of each segment end, with its reading there.
    reps = n[ends]
    end_of_point = np.repeat(np.arange(len(ends)), reps)
    j = np.arange(len(end_of_point)) - np.repeat(np.cumsum(reps) - reps, reps)  # position within the set
    at_end = k_start[ends][end_of_point] + j
    at_read = k_start[read_k][end_of_point] + j
    bucket = k_bucket[ends][end_of_point]
    several = segments[end_of_point] > 1
    at = np.where(several, k_ts[ends][end_of_point], bucket)
    points = pl.DataFrame({"_logical": logi[at_end], "_bucket": bucket, "_at": at, "value": value[at_read]})
    # The row of a logical series moves to its last segment end in a bucket with several segments.
    moves = (
        points.filter(pl.Series(several)).group_by("_logical", "_bucket").agg(pl.col("_at").max())
        if several.any()
        else points.clear().select("_logical", "_bucket", "_at")
    )
    return points, moves
