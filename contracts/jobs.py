"""Columns that several job tables share, declared once with their types.

A job (Slurm allocation or Kubernetes job) carries the same identity, owner, queue and time
columns from staging to the marts, the chargeback and the simulator's truth. Each table's
SCHEMA is built from these groups plus its own columns, in its column order; docs/marts.md
documents every column, and tests check the migrations against each SCHEMA.
"""

from __future__ import annotations

import polars as pl

TIME = pl.Datetime("us")

# cluster (the config's name) and the scheduler's ids of the job
JOB_IDS: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "scheduler": pl.String(),
    "job_id": pl.String(),
    "job_id_raw": pl.String(),
}
# Slurm job arrays and heterogeneous jobs (null elsewhere)
ARRAY_AND_HET: dict[str, pl.DataType] = {
    "array_job_id": pl.String(),
    "array_task_id": pl.String(),
    "het_job_id": pl.String(),
    "het_offset": pl.Int32(),
}
OWNER: dict[str, pl.DataType] = {"job_name": pl.String(), "user_name": pl.String(), "account": pl.String()}
ORG: dict[str, pl.DataType] = {"department": pl.String(), "division": pl.String()}
QUEUE: dict[str, pl.DataType] = {"partition_name": pl.String(), "qos": pl.String()}
# submit, eligible, start and end of the run; end null while it runs
TIMES: dict[str, pl.DataType] = {
    "submit_time": TIME,
    "eligible_time": TIME,
    "start_time": TIME,
    "end_time": TIME,
}
# GPUs held: MIG slices as fractions of a GPU (gpus) and devices or MIG instances (gpu_slots)
ALLOCATION: dict[str, pl.DataType] = {
    "gpus": pl.Float64(),
    "gpu_slots": pl.Int32(),
    "gpu_type": pl.String(),
    "is_mig": pl.Boolean(),
    "n_nodes": pl.Int32(),
    "hosts": pl.List(pl.String()),
}
