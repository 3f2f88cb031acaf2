"""The columns the review pages read from each mart: a subset of the mart's columns.

Reports do not import the transforms that build the marts, so each subset's names and types
are checked against the mart's SCHEMA by tests/unit/test_report_columns.py. ``conform``
keeps a frame to its subset, so a missing column is an error and an empty frame is typed.
"""

from __future__ import annotations

import polars as pl

from contracts import capacity_states

F64, STR, I64 = pl.Float64, pl.String, pl.Int64
# Each *_SCHEMA below is the subset of one mart's columns the pages read; their names and
# types are checked against the mart's SCHEMA by tests/unit/test_report_columns.py.
CLUSTER_SCHEMA = {
    "cluster": STR,
    "month": pl.Date,
    "capacity_gpu_hours": F64,
    "allocated_gpu_hours": F64,
    "active_gpu_hours": F64,
    "idle_gpu_hours": F64,
    "job_count": I64,
    "sample_coverage": F64,
    "jobs_without_samples": I64,
    "queue_seconds_p50": F64,
    "queue_seconds_p95": F64,
}
DEPARTMENT_SCHEMA = {
    "cluster": STR,
    "month": pl.Date,
    "division": STR,
    "department": STR,
    "job_count": I64,
    "user_count": I64,
    "gpu_hours": F64,
    "measured_gpu_hours": F64,
    "active_gpu_hours": F64,
    "idle_gpu_hours": F64,
    "zero_util_gpu_hours": F64,
    "utilization": F64,
    "energy_kwh": F64,
    "queue_seconds_p50": F64,
    "queue_seconds_p95": F64,
    "share_of_capacity": F64,
}
JOB_SCHEMA = {
    "cluster": STR,
    "job_id": STR,
    "job_name": STR,
    "user_name": STR,
    "account": STR,
    "department": STR,
    "partition_name": STR,
    "state": STR,
    "start_time": pl.Datetime("us"),
    "gpus": F64,
    "gpu_model": STR,
    "gpu_hours": F64,
    "active_gpu_hours": F64,
    "utilization": F64,
    "utilization_signal": STR,
    "idle_gpu_hours": F64,
    "queue_seconds": F64,
    "n_samples": F64,
    "elapsed_seconds": I64,
}
# Kept when the jobs frame has it (fct_job_usage does; frames built before Kubernetes may not):
# the review's scheduler table shows when a month has more than one scheduler.
OPTIONAL_JOB_COLUMNS = {"scheduler": STR}
HOURLY_SCHEMA = {
    "cluster": STR,
    "hour": pl.Datetime("us"),
    "capacity_seconds": F64,
    "allocated_seconds": F64,
    "active_seconds": F64,
    "n_samples": F64,
    "expected_samples": F64,
}
# 12 months of fct_job_usage runs (what their idle cost needs) and of fct_gpu_hourly capacity
# per GPU model label (MIG instances as "A100 3g.40gb") and hour; build_inputs sums them per
# month, cluster and model with their costs (``reports.pricing.model_months``).
RUN_SCHEMA = {
    "cluster": STR,
    "month": pl.Date,
    "gpu_model": STR,
    "start_time": pl.Datetime("us"),
    "elapsed_seconds": I64,
    "gpu_hours": F64,
    "idle_gpu_hours": F64,
}
MODEL_HOUR_SCHEMA = {
    "cluster": STR,
    "month": pl.Date,
    "gpu_model": STR,
    "hour": pl.Datetime("us"),
    "capacity_seconds": F64,
    "allocated_seconds": F64,
}
FLAG_SCHEMA = {
    "cluster": STR,
    "job_id": STR,
    "job_id_raw": STR,
    "start_time": pl.Datetime("us"),
    "user_name": STR,
    "account": STR,
    "department": STR,
    "partition_name": STR,
    "job_name": STR,
    "gpus": F64,
    "gpu_model": STR,
    "gpu_hours": F64,
    "utilization": F64,
    "reason": STR,
    "severity": STR,
    "detail": STR,
    "recommendation": STR,
    "wasted_gpu_hours": F64,
    "idle_gpu_hours": F64,
    "idle_cost": F64,
}
USER_SCHEMA = {
    "cluster": STR,
    "user_name": STR,
    "department": STR,
    "job_count": I64,
    "gpu_hours": F64,
    "active_gpu_hours": F64,
    "idle_gpu_hours": F64,
    "zero_util_gpu_hours": F64,
    "utilization": F64,
    "idle_cost": F64,
    "flagged_job_count": I64,
    "wasted_gpu_hours": F64,
    "is_zero_util_over_threshold": pl.Boolean,
    "is_low_efficiency": pl.Boolean,
}

# Per cluster and month, summed from mart_user_monthly (12 months: the headline's change): runs
# with at least one flag and the GPU-hours they waste, per department.
FLAG_MONTH_SCHEMA = {
    "cluster": STR,
    "month": pl.Date,
    "department": STR,
    "flagged_job_count": I64,
    "wasted_gpu_hours": F64,
}
# Per cluster and month, summed from fct_gpu_capacity_split: capacity and its GPU-hours in each
# state of contracts/capacity_states.py (the headline's availability and its change).
CAPACITY_STATE_SCHEMA = {
    "cluster": STR,
    "month": pl.Date,
    "capacity_gpu_hours": F64,
    **{f"{state}_gpu_hours": F64 for state in capacity_states.STATES},
}


def conform(frame: pl.DataFrame | None, schema: dict, name: str) -> pl.DataFrame:
    """Keep only the columns the report reads; an empty frame becomes a typed empty frame."""
    if frame is None or frame.is_empty():
        return pl.DataFrame(schema=schema)
    missing = sorted(set(schema) - set(frame.columns))
    if missing:
        raise ValueError(f"{name} frame lacks columns: {', '.join(missing)}")
    return frame.select(pl.col(column).cast(dtype) for column, dtype in schema.items())
