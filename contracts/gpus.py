"""Columns that name one GPU or MIG instance, shared by the per-GPU tables."""

from __future__ import annotations

import polars as pl

# One GPU (gpu_i_id null) or MIG instance of a host; the profile ("3g.40gb") says what share of the card it is.
GPU_INSTANCE: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "gpu_i_id": pl.Int16(),
    "gpu_i_profile": pl.String(),
}
