"""Row-level plumbing of the DCGM screening: runs of equal labels, cheap row gathers, and the
final ``ORDER`` of the clean rows as one Int64 sort key."""

from __future__ import annotations

import polars as pl

from contracts.schemas import RAW_SAMPLE_SCHEMA, SAMPLE_VALUE_COLUMNS

ORDER = ["cluster", "hostname", "gpu", "gpu_i_id", "hpc_job", "pod", "extra_labels", "ts"]
ORDER += [c for c in RAW_SAMPLE_SCHEMA if c not in ORDER and c not in SAMPLE_VALUE_COLUMNS]
RUN_LABELS = [c for c in ORDER if c != "ts"]  # every label column, and day


def rows_where(frame: pl.DataFrame, mask: pl.Series | pl.Expr) -> pl.DataFrame:
    """``frame.filter(mask)`` as a gather of row numbers: filtering a multi-chunk frame
    rechunks all of it (+1.5 GB on a 5.76 M-row day), a gather copies only the rows taken."""
    if isinstance(mask, pl.Expr):
        mask = frame.select(mask).to_series()
    return frame.select(pl.all().gather(mask.arg_true()))


def label_runs(frame: pl.DataFrame) -> tuple[pl.Series, pl.DataFrame]:
    """(per row: its run of equal ``RUN_LABELS``, per run ``_run`` and its labels).

    Rows of one series are contiguous in practice, so per-series work happens on the few
    runs instead of the millions of rows.
    """
    changed = pl.int_range(0, frame.height, eager=True) == 0
    for column in RUN_LABELS:  # one column at a time: a chunked column is rechunked while compared
        values = frame.get_column(column)
        changed = changed | values.ne_missing(values.shift(1)).fill_null(False)
    run = (changed.cum_sum() - 1).cast(pl.UInt32()).alias("_run")
    runs = rows_where(frame.select(RUN_LABELS), run.is_first_distinct()).with_row_index("_run")
    return run, runs.with_columns(run.rle().struct.field("len").alias("_rows"))


def ordered_rows(frame: pl.DataFrame, keep: pl.Series, run: pl.Series, runs: pl.DataFrame) -> pl.DataFrame:
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
        return rows_where(frame, keep).sort(ORDER, nulls_last=False, maintain_order=True)
    rank = runs.join(distinct, on=RUN_LABELS, how="left", nulls_equal=True, maintain_order="left")
    key = (rank.get_column("_rank").cast(pl.Int64()).gather(run) * (1 << bits) + (ts - low)).alias("_key")
    dropping = not keep.all()
    if (key.filter(keep) if dropping else key).is_sorted():
        return rows_where(frame, keep) if dropping else frame
    behind = pl.when(pl.col("_keep")).then(pl.col("_key")).otherwise(pl.lit(1 << 62) + pl.int_range(pl.len()))
    frame = frame.with_columns(key, keep.alias("_keep")).with_columns(behind.alias("_key"))
    return frame.sort("_key", maintain_order=True).head(int(keep.sum())).drop("_key", "_keep")
