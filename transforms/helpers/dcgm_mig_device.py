"""MIG device fields: values dcgm-exporter repeats on every instance of a GPU, moved to one
device row per GPU and ts (or into the GPU's own row when it has one)."""

from __future__ import annotations

import polars as pl

from contracts.schemas import RAW_SAMPLE_SCHEMA
from transforms.helpers.dcgm_runs import rows_where

DEVICE_FIELDS = ["gpu_util", "power_w", "energy_mj"]
GPU = ["cluster", "uuid", "_host", "_gpu"]  # a physical GPU: uuid, else hostname + gpu


def _gpu_of(frame: pl.DataFrame) -> pl.DataFrame:
    no_uuid = pl.col("uuid").is_null()
    return frame.with_columns(
        pl.when(no_uuid).then(pl.col("hostname")).alias("_host"), pl.when(no_uuid).then(pl.col("gpu")).alias("_gpu")
    )


def mig_device_rows(
    frame: pl.DataFrame, keep: pl.Series, run: pl.Series, runs: pl.DataFrame, counts: dict[str, int]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(frame with ``DEVICE_FIELDS`` nulled on instance rows, the device rows to add)."""
    instance = pl.col("gpu_i_id").is_not_null()
    counts.update(dict.fromkeys(("mig_device_rows", "mig_device_values_moved"), 0))
    counts.update(dict.fromkeys(("mig_device_field_disagreement", "mig_parent_rows_filled"), 0))
    carries = instance & pl.any_horizontal(pl.col(f).is_not_null() for f in DEVICE_FIELDS)
    labels = ["day", "hostname", "gpu", "model_name", "pci_bus_id", "device"]
    carrying = frame.select("cluster", "uuid", "ts", *labels, "gpu_i_id", *DEVICE_FIELDS)
    carrying = rows_where(carrying, frame.select(carries).to_series() & keep)
    if carrying.is_empty():
        return frame, frame.clear()
    device = (
        _gpu_of(carrying)
        .group_by(*GPU, "ts", maintain_order=True)
        .agg(
            *(pl.col(c).min() for c in labels),
            *(pl.col(f).max() for f in DEVICE_FIELDS),
            *((pl.col(f).max() != pl.col(f).min()).fill_null(False).alias(f"_split_{f}") for f in DEVICE_FIELDS),
        )
    )
    counts["mig_device_values_moved"] = int(carrying.select(pl.col(DEVICE_FIELDS).count()).sum_horizontal().item())
    counts["mig_device_field_disagreement"] = int(device.select(pl.sum_horizontal(pl.col("^_split_.*$").sum())).item())
    frame = frame.with_columns(pl.when(~instance).then(pl.col(f)).alias(f) for f in DEVICE_FIELDS)
    # Rows without gpu_i_id of a MIG GPU (found on the runs, then their rows) get the values instead.
    parent_runs = _gpu_of(runs).filter(pl.col("gpu_i_id").is_null())
    parent_runs = parent_runs.join(device.select(GPU).unique(), on=GPU, how="semi", nulls_equal=True)
    if parent_runs.height:
        rows = _gpu_of(rows_where(frame.with_row_index("_row"), run.is_in(parent_runs["_run"].implode()) & keep))
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
