"""Shared helpers for the fct_job_usage tests: crafted job runs, attributed hours and the transform call."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from tests.fixtures import h200
from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA as ATTRIBUTED_SCHEMA
from transforms.marts.fct_job_usage import fct_job_usage
from transforms.staging.stg_slurm__jobs import SCHEMA as JOBS_SCHEMA

MARCH = (datetime(2024, 3, 1), datetime(2024, 4, 1))
APRIL = (datetime(2024, 4, 1), datetime(2024, 5, 1))
ACCOUNTS = pl.DataFrame(
    {
        "cluster": ["c1", "h200"],
        "account": ["physics", "physics"],
        "department": ["phys", "phys"],
        "department_name": ["Physics", "Physics"],
        "division": ["sci", "sci"],
        "division_name": ["Science", "Science"],
    }
)
GPU_MODELS = pl.DataFrame(
    {
        "cluster": ["c1", "c1", "c1", "h200"],
        "hostname": ["n1", "n2", "m1", h200.HOSTNAME],
        "gpu_model": ["H100", "H100", "A100", "H200"],
    }
)


def job(job_id_raw: str, start: datetime | None, end: datetime | None, **fields) -> dict:
    """A stg_slurm__jobs row: 1 H100 on n1, account physics, submitted/eligible an hour before start."""
    submit = (start or datetime(2024, 3, 10)) - timedelta(hours=1)
    row = {c: None for c in JOBS_SCHEMA} | {
        "cluster": "c1",
        "scheduler": "slurm",
        "job_id": job_id_raw,
        "job_id_raw": job_id_raw,
        "job_name": "train",
        "user_name": "alice",
        "account": "physics",
        "partition_name": "gpu",
        "qos": "normal",
        "state": "COMPLETED" if end else "RUNNING",
        "submit_time": submit,
        "eligible_time": submit + timedelta(minutes=30),
        "start_time": start,
        "end_time": end,
        "is_open": start is not None and end is None,
        "gpus": 1.0,
        "gpu_slots": 1,
        "gpu_type": "h100",
        "is_mig": False,
        "n_nodes": 1,
        "hosts": ["n1"],
        "n_steps": 1,
    }
    return row | fields


def hour(
    hpc_job: str | None,
    at: datetime,
    start_time: datetime | None = None,
    n: int = 60,
    method: str = "hpc_job_label",
    **fields,
) -> dict:
    """An int_gpu_minutes_attributed row: ``n`` samples of n1 GPU 0 in the hour at ``at`` tied to
    the run of ``hpc_job`` that started at ``start_time`` (default: the hour); sums via fields."""
    row = {c: (0.0 if c.endswith(("_n", "_sum")) else None) for c in ATTRIBUTED_SCHEMA} | {
        "cluster": "c1",
        "hostname": "n1",
        "gpu": 0,
        "hour": at,
        "job_id_raw": hpc_job,
        "start_time": start_time if start_time is not None or hpc_job is None else at,
        "attribution_method": method,
        "samples": float(n),
        "zero_samples": 0.0,
    }
    return row | fields


def sm(value: float, n: int = 60) -> dict:
    """Attributed fields for ``n`` samples whose sm_active (the best signal) is ``value``."""
    return {"sm_active_sum": value * n, "sm_active_n": float(n), "best_sum": value * n, "best_n": float(n)}


def fct(jobs: list[dict], hours: list[dict], period=MARCH, step_seconds: int = 60) -> pl.DataFrame:
    return fct_job_usage(
        jobs=pl.DataFrame(jobs, schema=JOBS_SCHEMA),
        attributed=pl.DataFrame(hours, schema=ATTRIBUTED_SCHEMA),
        accounts=ACCOUNTS,
        gpu_models=GPU_MODELS,
        period_start=period[0],
        period_end=period[1],
        step_seconds=step_seconds,
    )
