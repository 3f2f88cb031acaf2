"""Screening of raw DCGM rows for data that is wrong in the wild (docs/design.md, issue 3).

``screen_samples(wide, partition_key)`` takes ``RAW_SAMPLE_SCHEMA`` rows and returns
``ScreenResult(clean, quarantine, counts)``. In order:

1. Restart duplicates: rows with the same ``RESTART_KEY`` and ``ts`` but different other
   labels (the exporter pod in ``hostname``, ``instance`` in ``extra_labels``...) are one
   measurement seen twice. The row of the series (label set) with the most rows in the
   input is kept, ties broken by the smallest ``(hostname, extra_labels, gpu, model_name,
   pci_bus_id, device, gpu_i_profile)`` (nulls last): a short-lived copy labelled with an
   exporter pod does not become a phantom host for a few minutes. The other rows are
   dropped and their non-null values quarantined. Rows without ``uuid`` are never merged.
   The choice ignores values: when the kept row holds a sentinel and the dropped one a
   good value, the sample is lost (both are quarantined).
2. Values: DCGM blank sentinels, NaN/inf and values outside ``BOUNDS``
   (``transforms.dcgm_sentinels``) become null in ``clean`` and are quarantined.
3. MIG: ``DEVICE_FIELDS`` are properties of the whole GPU that dcgm-exporter repeats on
   every instance. They are nulled on instance rows and carried by ONE device row per GPU
   (``uuid``; ``hostname, gpu`` when ``uuid`` is null) and ``ts`` with ``gpu_i_id``,
   ``gpu_i_profile``, ``hpc_job``, ``pod``, ``namespace``, ``container`` null and
   ``extra_labels`` "{}". The value is the instances' common value; if they disagree the
   max is kept and ``mig_device_field_disagreement`` counts it (per GPU, ts and field).
   Where the GPU already has a row without ``gpu_i_id`` at that ts, no row is added: that
   row's own device values win and its nulls are filled (``mig_parent_rows_filled``).

Quarantine: one row per (series labels, field, reason); ``n_rows`` = values in the group,
``payload`` = ``{"example_value", "extra_labels", "first_ts", "last_ts"}`` (example = the
group's earliest value; non-finite ones as strings, ``extra_labels`` as a string).
Reasons name the sentinel, or the field, bound and worst value ("sm_active above 1 (max
1.7)"). ``clean`` is the kept input rows sorted by ``ORDER`` (nulls first), then the MIG
device rows sorted by ``ORDER``; both outputs are deterministic and do not depend on the
input row order.

Cost: per-series work runs on the runs of equal labels (``_runs``), not per row, and the
final order is one Int64 sort key; sorted input (the pivot's output) is not sorted again,
so only dropping rows copies the frame. Measured on 2 shared cores, 1000 GPUs x 5760
timestamps (5.76 M clean rows): ~1 s CPU, +0.17 GB; with 125 GPUs split in 2 MIG
instances, 100 GPUs with an hour of restart overlap and 0.1 % sentinels/out-of-range
(6.5 M rows in, 7.2 M out): ~1.7 s CPU, +2.1 GB (the copy that drops the duplicates).

``counts``: total_rows, input_values (non-null value cells in), clean_rows
(= total_rows - duplicate_rows + mig_device_rows), duplicate_rows, duplicate_values,
sentinel_values, out_of_range_values (incl. non_finite_values), mig_device_rows,
mig_device_values_moved, mig_device_field_disagreement, mig_parent_rows_filled,
quarantine_groups, quarantined_values (= sum of n_rows = duplicate_values +
sentinel_values + out_of_range_values).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from cardhours.schemas import RAW_SAMPLE_SCHEMA, SAMPLE_VALUE_COLUMNS
from transforms.dcgm_labels import LABEL_COLUMNS
from transforms.dcgm_sentinels import is_invalid, quarantine_rows, value_events

SOURCE = "dcgm"
DUPLICATE_REASON = "duplicate series after exporter restart"
SERIES = ["cluster", *LABEL_COLUMNS]
RESTART_KEY = ["cluster", "uuid", "gpu_i_id", "hpc_job", "pod", "namespace", "container"]
VOLATILE = ["hostname", "extra_labels", "gpu", "model_name", "pci_bus_id", "device", "gpu_i_profile"]
DEVICE_FIELDS = ["gpu_util", "power_w", "energy_mj"]
ORDER = ["cluster", "hostname", "gpu", "gpu_i_id", "hpc_job", "pod", "extra_labels", "ts"]
ORDER += [c for c in RAW_SAMPLE_SCHEMA if c not in ORDER and c not in SAMPLE_VALUE_COLUMNS]
RUN_LABELS = [c for c in ORDER if c != "ts"]  # every label column, and day
GPU = ["cluster", "uuid", "_host", "_gpu"]  # a physical GPU: uuid, else hostname + gpu


@dataclass(frozen=True)
class ScreenResult:
    clean: pl.DataFrame  # RAW_SAMPLE_SCHEMA
    quarantine: pl.DataFrame  # QUARANTINE_SCHEMA
    counts: dict[str, int]


def quarantine_share(counts: dict[str, int]) -> float:
    """Quarantined values / non-null values delivered (``input_values``); 0.0 for no input."""
    return counts["quarantined_values"] / counts["input_values"] if counts["input_values"] else 0.0


def _rows_where(frame: pl.DataFrame, mask: pl.Series | pl.Expr) -> pl.DataFrame:
    """``frame.filter(mask)`` as a gather of row numbers: filtering a multi-chunk frame
    rechunks all of it (+1.5 GB on a 5.76 M-row day), a gather copies only the rows taken."""
    if isinstance(mask, pl.Expr):
        mask = frame.select(mask).to_series()
    return frame.select(pl.all().gather(mask.arg_true()))


def _runs(frame: pl.DataFrame) -> tuple[pl.Series, pl.DataFrame]:
    """(per row: its run of equal ``RUN_LABELS``, per run ``_run`` and its labels).

    Rows of one series are contiguous in practice, so per-series work happens on the few
    runs instead of the millions of rows.
    """
    changed = pl.int_range(0, frame.height, eager=True) == 0
    for column in RUN_LABELS:  # one column at a time: a chunked column is rechunked while compared
        values = frame.get_column(column)
        changed = changed | values.ne_missing(values.shift(1)).fill_null(False)
    run = (changed.cum_sum() - 1).cast(pl.UInt32()).alias("_run")
    runs = _rows_where(frame.select(RUN_LABELS), run.is_first_distinct()).with_row_index("_run")
    return run, runs.with_columns(run.rle().struct.field("len").alias("_rows"))


def _gpu_of(frame: pl.DataFrame) -> pl.DataFrame:
    no_uuid = pl.col("uuid").is_null()
    return frame.with_columns(
        pl.when(no_uuid).then(pl.col("hostname")).alias("_host"), pl.when(no_uuid).then(pl.col("gpu")).alias("_gpu")
    )


def _restart_duplicates(frame: pl.DataFrame, run: pl.Series, runs: pl.DataFrame) -> pl.Series:
    """Row numbers of the rows to drop as restart duplicates (sorted)."""
    series = runs.select(SERIES).unique()
    clashing = series.filter(pl.col("uuid").is_not_null() & (pl.len().over(RESTART_KEY) > 1)).select(RESTART_KEY)
    if clashing.is_empty():
        return pl.Series("_row", [], dtype=pl.UInt32())
    candidates = runs.join(clashing.unique(), on=RESTART_KEY, how="semi", nulls_equal=True)
    candidates = candidates.with_columns(pl.col("_rows").sum().over(SERIES).alias("_series_rows"))
    preference = [*RESTART_KEY, "_series_rows", *VOLATILE]  # the longest series first, then the smallest labels
    descending = [column == "_series_rows" for column in preference]
    candidates = candidates.sort(preference, descending=descending, nulls_last=True).select(
        "_run",
        pl.struct(RESTART_KEY).rle_id().alias("_group"),
        pl.struct(preference).rle_id().alias("_preference"),
    )
    rows = pl.DataFrame([run, frame.get_column("ts")]).with_row_index("_row").join(candidates, on="_run")
    best = pl.col("_preference").min().over("_group", "ts")
    return rows.filter(pl.col("_preference") > best).get_column("_row").sort()


def _mig_device_rows(
    frame: pl.DataFrame, keep: pl.Series, run: pl.Series, runs: pl.DataFrame, counts: dict[str, int]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(frame with ``DEVICE_FIELDS`` nulled on instance rows, the device rows to add)."""
    instance = pl.col("gpu_i_id").is_not_null()
    counts.update(dict.fromkeys(("mig_device_rows", "mig_device_values_moved"), 0))
    counts.update(dict.fromkeys(("mig_device_field_disagreement", "mig_parent_rows_filled"), 0))
    carries = instance & pl.any_horizontal(pl.col(f).is_not_null() for f in DEVICE_FIELDS)
    labels = ["day", "hostname", "gpu", "model_name", "pci_bus_id", "device"]
    carrying = frame.select("cluster", "uuid", "ts", *labels, "gpu_i_id", *DEVICE_FIELDS)
    carrying = _rows_where(carrying, frame.select(carries).to_series() & keep)
    if carrying.is_empty():
        return frame, frame.clear()
    device = _gpu_of(carrying).group_by(*GPU, "ts", maintain_order=True).agg(
        *(pl.col(c).min() for c in labels),
        *(pl.col(f).max() for f in DEVICE_FIELDS),
        *((pl.col(f).max() != pl.col(f).min()).fill_null(False).alias(f"_split_{f}") for f in DEVICE_FIELDS),
    )
    counts["mig_device_values_moved"] = int(carrying.select(pl.col(DEVICE_FIELDS).count()).sum_horizontal().item())
    counts["mig_device_field_disagreement"] = int(device.select(pl.sum_horizontal(pl.col("^_split_.*$").sum())).item())
    frame = frame.with_columns(pl.when(~instance).then(pl.col(f)).alias(f) for f in DEVICE_FIELDS)
    # Rows without gpu_i_id of a MIG GPU (found on the runs, then their rows) get the values instead.
    parent_runs = _gpu_of(runs).filter(pl.col("gpu_i_id").is_null())
    parent_runs = parent_runs.join(device.select(GPU).unique(), on=GPU, how="semi", nulls_equal=True)
    if parent_runs.height:
        rows = _gpu_of(_rows_where(frame.with_row_index("_row"), run.is_in(parent_runs["_run"].implode()) & keep))
        fill = rows.select("_row", *GPU, "ts").join(device, on=[*GPU, "ts"], nulls_equal=True)
        device = device.join(fill.select(*GPU, "ts").unique(), on=[*GPU, "ts"], how="anti", nulls_equal=True)
        index = fill.get_column("_row")
        empty = pl.repeat(None, frame.height, dtype=pl.Float64(), eager=True)
        filled = [empty.clone().scatter(index, fill.get_column(f)).alias(f"_fill_{f}") for f in DEVICE_FIELDS]
        gets = [pl.col(f).is_null() & pl.col(f"_fill_{f}").is_not_null() for f in DEVICE_FIELDS]
        frame = frame.with_columns(filled)
        counts["mig_parent_rows_filled"] = int(frame.select(pl.any_horizontal(gets).sum()).item())
        frame = frame.with_columns(pl.coalesce(f, f"_fill_{f}").alias(f) for f in DEVICE_FIELDS)
        frame = frame.drop(pl.col("^_fill_.*$"))
    counts["mig_device_rows"] = device.height
    device = device.with_columns(pl.lit("{}").alias("extra_labels"))
    rows = device.select(pl.col(c) if c in device.columns else pl.lit(None).alias(c) for c in RAW_SAMPLE_SCHEMA)
    return frame, rows.cast(RAW_SAMPLE_SCHEMA)


def _ordered(frame: pl.DataFrame, keep: pl.Series, run: pl.Series, runs: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``frame`` where ``keep``, sorted by ``ORDER`` (nulls first, stable).

    One Int64 key per row, ``rank(labels of its run) << bits | ts - min(ts)``: the labels
    are ranked once per run. Sorted input (the pivot's output) is returned as it is, or
    filtered; unsorted input is sorted once, with the dropped rows keyed behind every kept
    row (real keys stay below 2**62) and sliced off, so the frame is copied only once.
    """
    ts = frame.get_column("ts").cast(pl.Int64())
    low, span = ts.min() or 0, (ts.max() or 0) - (ts.min() or 0)
    bits = max(int(span).bit_length(), 1)
    distinct = runs.select(RUN_LABELS).unique().sort(RUN_LABELS, nulls_last=False).with_row_index("_rank")
    if int(distinct.height).bit_length() + bits > 62:
        return _rows_where(frame, keep).sort(ORDER, nulls_last=False, maintain_order=True)
    rank = runs.join(distinct, on=RUN_LABELS, how="left", nulls_equal=True, maintain_order="left")
    key = (rank.get_column("_rank").cast(pl.Int64()).gather(run) * (1 << bits) + (ts - low)).alias("_key")
    dropping = not keep.all()
    if (key.filter(keep) if dropping else key).is_sorted():
        return _rows_where(frame, keep) if dropping else frame
    behind = pl.when(pl.col("_keep")).then(pl.col("_key")).otherwise(pl.lit(1 << 62) + pl.int_range(pl.len()))
    frame = frame.with_columns(key, keep.alias("_keep")).with_columns(behind.alias("_key"))
    return frame.sort("_key", maintain_order=True).head(int(keep.sum())).drop("_key", "_keep")


def screen_samples(wide: pl.DataFrame, partition_key: str) -> ScreenResult:
    """Screen ``RAW_SAMPLE_SCHEMA`` rows (module doc): clean rows, quarantine rows, counts."""
    frame = wide.select(list(RAW_SAMPLE_SCHEMA)).cast(RAW_SAMPLE_SCHEMA)
    fields = list(SAMPLE_VALUE_COLUMNS)
    counts: dict[str, int] = {"total_rows": frame.height}
    counts["input_values"] = int(frame.select(pl.col(fields).count()).sum_horizontal().item())
    run, runs = _runs(frame)

    dropped = _restart_duplicates(frame, run, runs)
    keep = pl.repeat(True, frame.height, eager=True)
    keep = keep.scatter(dropped, False) if dropped.len() else keep
    events = value_events(frame.select(pl.all().gather(dropped)), fields, duplicate=DUPLICATE_REASON)
    counts["duplicate_rows"] = dropped.len()

    flagged = _rows_where(frame, frame.select(pl.any_horizontal(is_invalid(f) for f in fields)).to_series() & keep)
    events += value_events(flagged, fields)
    bad = [f for f, e in zip(fields, events[len(fields):]) if e.height]
    frame = frame.with_columns(pl.when(~is_invalid(f)).then(pl.col(f)).alias(f) for f in bad)

    frame, device_rows = _mig_device_rows(frame, keep, run, runs, counts)
    clean = _ordered(frame, keep, run, runs)
    if device_rows.height:  # appended, not merged in: merging would copy every row
        everything = pl.repeat(True, device_rows.height, eager=True)
        clean = pl.concat([clean, _ordered(device_rows, everything, *_runs(device_rows))], rechunk=False)

    events_frame = pl.concat(events)
    kinds = dict(events_frame.group_by("kind").len().iter_rows())
    quarantine = quarantine_rows(events_frame, partition_key, SOURCE)
    counts.update(
        clean_rows=clean.height,
        duplicate_values=kinds.get("duplicate", 0),
        sentinel_values=kinds.get("sentinel", 0),
        non_finite_values=kinds.get("non_finite", 0),
        out_of_range_values=kinds.get("non_finite", 0) + kinds.get("above", 0) + kinds.get("below", 0),
        quarantine_groups=quarantine.height,
        quarantined_values=int(quarantine.get_column("n_rows").sum()),
    )
    return ScreenResult(clean=clean, quarantine=quarantine, counts=dict(sorted(counts.items())))
