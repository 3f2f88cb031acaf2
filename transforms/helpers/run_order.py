"""The canonical order of job-run rows, so float sums do not depend on read order.

Summing floats in a different order changes the last bits, so a mart aggregated from rows
in whatever order DuckDB returned them could differ between two runs on the same data.
Every transform that sums per-run floats sorts its input with ``in_run_order`` first.
"""

from __future__ import annotations

import polars as pl

RUN_ORDER = ("cluster", "job_id_raw", "job_id", "submit_time", "start_time")


def in_run_order(runs: pl.DataFrame) -> pl.DataFrame:
    """``runs`` sorted by the run key columns it has (cluster, raw id, id, submit, start)."""
    keys = [column for column in RUN_ORDER if column in runs.columns]
    return runs.sort(keys, nulls_last=True, maintain_order=True) if keys else runs
