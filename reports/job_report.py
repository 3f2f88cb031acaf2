"""One job's efficiency report, in the spirit of Princeton Jobstats: ``job_report(...)`` -> a
plain dict (the ``--json`` output, also what reports/job_report_text.py renders).

Pure: frames in (the job's ``fct_job_usage`` runs and the frames of
warehouse/books/job_reads.py, the config's inventory and sample steps), dict out. Keys are
stable and carry their unit (``gpu_hours``, ``energy_kwh``, ``mean_power_w``); times are ISO
8601 UTC; ratios 0-1.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import polars as pl

from contracts.flags import FLAG_REASONS, SEVERITY_RANK
from reports.job_gpus import per_gpu

WHO = ("user_name", "account", "department", "division", "partition_name", "qos", "gpu_model", "job_name")
RUN_FIELDS = (
    "job_id",
    "job_id_raw",
    "month",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "elapsed_seconds",
    "queue_seconds",
    "gpus",
    "gpu_model",
    "hosts",
    "gpu_hours",
    "active_gpu_hours",
    "idle_gpu_hours",
    "utilization",
    "utilization_signal",
    "mean_sm_active",
    "mean_gr_engine_active",
    "mean_gpu_util",
    "peak_fb_used_mib",
    "mean_fb_used_mib",
    "energy_kwh",
    "sample_coverage",
    "attribution_method",
)  # fmt: skip (one field list, read as a table)
REASON_ORDER = {reason.code: rank for rank, reason in enumerate(FLAG_REASONS)}
SUMMARY = {reason.code: reason.summary for reason in FLAG_REASONS}


@dataclass(frozen=True)
class JobInputs:
    """Frames for one job: ``runs`` (fct_job_usage rows), ``flags``, ``charges``, ``gpus``
    (job_reads.READS), ``inventory`` (config INVENTORY_SCHEMA), the clusters' sample steps and
    the config's currency."""

    runs: pl.DataFrame
    flags: pl.DataFrame
    charges: pl.DataFrame
    gpus: pl.DataFrame
    inventory: pl.DataFrame
    step_seconds: dict[str, int]
    currency: str


def job_report(query: str, inputs: JobInputs) -> dict[str, Any]:
    """The report of the runs matching ``query`` (one cluster)."""
    runs = inputs.runs
    gpus = per_gpu(inputs.gpus, inputs.inventory, inputs.step_seconds)
    cost = float(inputs.charges["cost"].sum()) if inputs.charges.height else None
    return {
        "query": query,
        "job_id": _one(runs, "job_id") if runs["job_id"].n_unique() == 1 else None,
        "cluster": runs["cluster"][0],
        "scheduler": runs["scheduler"][0],
        "kind": job_kind(query, runs),
        **{name: _one(runs, name) for name in WHO},
        "first_start_time": _iso(runs["start_time"].min()),
        "last_end_time": None if runs["end_time"].null_count() else _iso(runs["end_time"].max()),
        "totals": _totals(runs, gpus, cost),
        "currency": inputs.currency,
        "runs": [_run(row, inputs.charges) for row in runs.iter_rows(named=True)],
        "flags": flags(inputs.flags),
        "gpus": gpus.to_dicts(),
    }


def job_kind(query: str, runs: pl.DataFrame) -> str:
    """What kind of job it is, in words."""
    first = runs.row(0, named=True)
    if first["scheduler"] == "kubernetes":
        parts = first["job_id"].split("/")
        queue = f", admitted through the Kueue LocalQueue {first['partition_name']}" if first["partition_name"] else ""
        if len(parts) == 2:
            return f"Kubernetes pod {parts[1]} in namespace {parts[0]}{queue}"
        what = (
            "a gang (pod group): its pods are scheduled together"
            if parts[1] == "PodGroup"
            else "its pods counted as one job"
        )
        return f"Kubernetes {parts[1]} {parts[2]} in namespace {parts[0]}: {what}{queue}"
    runs_n = runs.select("job_id_raw", "start_time").unique().height
    jobs_n = runs["job_id"].n_unique()
    if jobs_n > 1 and first["array_job_id"] == query:
        return f"Slurm array job {query}: {jobs_n} tasks, {runs_n} runs"
    if jobs_n > 1 and first["het_job_id"] == query:
        return f"Slurm heterogeneous job {query}: {jobs_n} components"
    kind = (
        f"Slurm array task {first['array_task_id']} of array {first['array_job_id']}"
        if first["array_task_id"]
        else "Slurm job"
    )
    return kind + (f", requeued: {runs_n} runs" if runs_n > 1 else "")


def flags(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """The runs' flags, most severe first (contracts/flags.py's order within a severity), then the
    largest waste."""
    rows = sorted(
        frame.iter_rows(named=True),
        key=lambda r: (
            SEVERITY_RANK[r["severity"]],
            REASON_ORDER.get(r["reason"], 99),
            -(r["wasted_gpu_hours"] or 0.0),
            r["start_time"] or datetime.min,
        ),
    )
    keep = ("job_id", "reason", "severity", "detail", "recommendation", "wasted_gpu_hours", "idle_cost")
    return [
        {**{k: r[k] for k in keep}, "start_time": _iso(r["start_time"]), "summary": SUMMARY.get(r["reason"])}
        for r in rows
    ]


def _totals(runs: pl.DataFrame, gpus: pl.DataFrame, cost: float | None) -> dict[str, Any]:
    measured = runs.filter(pl.col("utilization").is_not_null())
    hours = float(measured["gpu_hours"].sum())
    signals = sorted(set(measured["utilization_signal"].drop_nulls()))
    energy = runs["energy_kwh"].drop_nulls()
    power = gpus["mean_power_w"].drop_nulls()
    return {
        "runs": runs.select("job_id_raw", "start_time").unique().height,
        "gpus": float(runs["gpus"].max()),
        "gpu_hours": float(runs["gpu_hours"].sum()),
        "active_gpu_hours": float(measured["active_gpu_hours"].sum()) if measured.height else None,
        "idle_gpu_hours": float(measured["idle_gpu_hours"].sum()) if measured.height else None,
        "utilization": float(measured["active_gpu_hours"].sum()) / hours if hours > 0 else None,
        "utilization_signal": ",".join(signals) or None,
        "peak_fb_used_mib": runs["peak_fb_used_mib"].max(),
        "card_memory_mib": gpus["card_memory_mib"].max() if gpus.height else None,
        "energy_kwh": float(energy.sum()) if energy.len() else None,
        "mean_power_w": float((gpus["mean_power_w"] * gpus["gpu_hours"]).sum() / gpus["gpu_hours"].sum())
        if power.len() and gpus["gpu_hours"].sum() > 0
        else None,
        "queue_seconds": runs["queue_seconds"].max(),
        "cost": cost,
    }


def _run(row: dict[str, Any], charges: pl.DataFrame) -> dict[str, Any]:
    mine = charges.filter(
        (pl.col("job_id_raw") == row["job_id_raw"])
        & pl.col("start_time").eq_missing(row["start_time"])
        & (pl.col("month") == row["month"])
    )
    values = {name: _iso(row[name]) for name in RUN_FIELDS}
    return {**values, "cost": float(mine["cost"].sum()) if mine.height else None}


def _one(runs: pl.DataFrame, name: str) -> Any:
    """The runs' value of ``name`` when they share it, else the values joined by ``, ``."""
    values = runs[name].drop_nulls().unique(maintain_order=True).to_list()
    return None if not values else values[0] if len(values) == 1 else ", ".join(map(str, values))


def _iso(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, date):
        return value.isoformat()
    return value
