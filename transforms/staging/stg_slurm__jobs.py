"""staging.stg_slurm__jobs: one row per Slurm job run, from raw sacct rows.

Input: ``raw.slurm_sacct`` rows (RAW_SACCT_SCHEMA), possibly from several day partitions
(sacct reports a job on every day its run or pending time overlaps). Output: one row per
allocation run overlapping [window_start, window_end), plus runs not started (pending or
cancelled before start) that were submitted in it. Step rows (``.batch``, ``.extern``,
``.0``) are not allocations; their number is counted in ``n_steps``.

Dedup: rows with the same (cluster, job_id_raw, submit_time, start_time) are one run, billed
once: a row with an End wins (the run's final times, whichever day partition holds it: a day
read again after the run ended, or a later day), else the row from the latest ``day``. A not-started row
is dropped when a later day shows that run started. Requeued runs (``sacct -D``) share
job_id_raw but differ in start_time and stay distinct.

Rows that cannot be parsed are returned separately in QUARANTINE_SCHEMA, never dropped.
GPUs come from AllocTRES, or from ReqTRES while nothing is allocated (pending jobs).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import polars as pl

from contracts.jobs import ALLOCATION, ARRAY_AND_HET, JOB_IDS, OWNER, QUEUE, TIMES
from transforms.helpers.slurm_rows import ERROR_COLUMNS, TIME_COLUMNS, parse_rows, quarantine_rows
from transforms.helpers.slurm_runs import (
    LAST_SAMPLES_SCHEMA,
    RUN_KEY,
    drop_superseded_pending,
    in_window,
    latest_per_key,
    runaway,
    with_runaway_ends,
    with_step_counts,
)

__all__ = [
    "ERROR_COLUMNS",
    "LAST_SAMPLES_SCHEMA",
    "RUN_KEY",
    "SCHEMA",
    "TIME_COLUMNS",
    "in_window",
    "runaway",
    "stg_slurm__jobs",
]  # re-exported too

SCHEMA: dict[str, pl.DataType] = {
    **JOB_IDS,
    **ARRAY_AND_HET,
    **OWNER,
    **QUEUE,
    "state": pl.String(),
    "state_detail": pl.String(),
    "exit_code": pl.String(),
    **TIMES,
    "is_open": pl.Boolean(),
    **ALLOCATION,
    "timelimit_seconds": pl.Int64(),
    "n_steps": pl.Int32(),
    # null, or how a runaway's unknown End was inferred: time_limit, last_sample or month_end
    "end_inferred_from": pl.String(),
}


def stg_slurm__jobs(
    raw: pl.DataFrame,
    window_start: datetime,
    window_end: datetime,
    mig_weights: Mapping[str, float] | None = None,
    max_node_gpus: pl.DataFrame | None = None,
    last_samples: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(jobs in SCHEMA, rejects in QUARANTINE_SCHEMA) from raw sacct rows.

    ``mig_weights`` maps a MIG gres type or profile ("3g.40gb") to its share of a GPU;
    profiles not in it count compute slices / 7. ``max_node_gpus`` (cluster, max_node_gpus)
    quarantines rows holding more GPUs than their nodes can. ``last_samples``
    (LAST_SAMPLES_SCHEMA) bounds runaway runs by their last labelled DCGM sample
    (transforms.helpers.slurm_policy has every rule).
    """
    indexed = raw.with_row_index("_row")
    parsed = parse_rows(indexed, mig_weights, max_node_gpus)
    rejects = quarantine_rows(indexed, parsed)
    good = parsed.filter(pl.col("_reason") == "")
    steps = latest_per_key(good.filter(pl.col("_is_step")), ["cluster", "job_id_raw", "start_time"])
    runs = latest_per_key(good.filter(~pl.col("_is_step")), list(RUN_KEY))
    runs = with_runaway_ends(drop_superseded_pending(runs), last_samples).filter(in_window(window_start, window_end))
    runs = with_step_counts(runs, steps)
    jobs = runs.with_columns(
        scheduler=pl.lit("slurm"),
        is_open=pl.col("start_time").is_not_null() & pl.col("end_time").is_null(),
    )
    jobs = jobs.select(list(SCHEMA)).cast(SCHEMA)
    return jobs.sort(["cluster", "submit_time", "job_id_raw", "start_time"]), rejects
