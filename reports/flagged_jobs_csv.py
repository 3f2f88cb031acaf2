"""``YYYY-MM/flagged_jobs.csv``: one line per flagged job run, from fct_job_flags rows (pure).

Columns (COLUMNS, in order): cluster, job_id, user, account, department, partition, gpus,
gpu_hours, utilization (0-1 ratio), utilization_signal, reasons (``;``-separated codes,
most severe first, then in contracts/flags.py order), severity (the highest),
recommendation (each reason's, most severe first, space-separated), idle_cost (the run's idle
GPU-hours x its model's GPU-hour rate, in the config's currency; empty when the model has no rate).

RFC 4180: comma-separated, ``\\n`` line ends, a header line, fields with commas, quotes or
line breaks quoted (quotes doubled). Text columns go through reports.csv_guard: text that a
spreadsheet would run as a formula (``= + - @``, tab or carriage return first, or after leading
whitespace) is prefixed with ``'``. Numbers: gpus and gpu_hours with up to 3 decimals,
utilization 4, idle_cost 2; null -> empty field. Lines are ordered by severity (high
first), then wasted GPU-hours (largest first), cluster, job.
"""

from __future__ import annotations

import csv
import io

import polars as pl

from contracts.flags import REASON_RANK, SEVERITY_RANK
from reports.csv_guard import guard_text_columns

FLAGGED_JOBS_CSV = "flagged_jobs.csv"  # <reports dir>/YYYY-MM/flagged_jobs.csv
COLUMNS = (
    "cluster",
    "job_id",
    "user",
    "account",
    "department",
    "partition",
    "gpus",
    "gpu_hours",
    "utilization",
    "utilization_signal",
    "reasons",
    "severity",
    "recommendation",
    "idle_cost",
)
RUN = ["cluster", "job_id", "job_id_raw", "start_time"]


def per_job(flags: pl.DataFrame) -> pl.DataFrame:
    """fct_job_flags rows (one per run and reason) -> one row per run with COLUMNS."""
    ranked = flags.with_columns(
        _severity=pl.col("severity").replace_strict(SEVERITY_RANK, return_dtype=pl.Int32),
        _reason=pl.col("reason").replace_strict(REASON_RANK, return_dtype=pl.Int32),
    ).sort([*RUN, "_severity", "_reason"], nulls_last=False)
    runs = ranked.group_by(RUN, maintain_order=True).agg(
        pl.col(
            "user_name",
            "account",
            "department",
            "partition_name",
            "gpus",
            "gpu_hours",
            "utilization",
            "utilization_signal",
            "idle_cost",
        ).first(),
        pl.col("reason").str.join(";").alias("reasons"),
        pl.col("severity").first(),
        pl.col("_severity").first(),
        pl.col("recommendation").unique(maintain_order=True).str.join(" ").alias("recommendation"),
        pl.col("wasted_gpu_hours").max().alias("_wasted"),
    )
    ordered = runs.sort(
        ["_severity", "_wasted", "cluster", "job_id", "start_time"],
        descending=[False, True, False, False, False],
        nulls_last=True,
    )
    return ordered.rename({"user_name": "user", "partition_name": "partition"}).select(COLUMNS)


def _number(value: float | None, digits: int) -> str:
    if value is None:
        return ""
    text = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _text(value: str | None) -> str:
    return "" if value is None else value


_DIGITS = {"gpus": 3, "gpu_hours": 3, "utilization": 4, "idle_cost": 2}


def flagged_jobs_csv(flags: pl.DataFrame) -> str:
    """The CSV text for fct_job_flags rows (header only when nothing is flagged)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(COLUMNS)
    for row in guard_text_columns(per_job(flags)).iter_rows(named=True):
        writer.writerow(_number(row[c], _DIGITS[c]) if c in _DIGITS else _text(row[c]) for c in COLUMNS)
    return buffer.getvalue()
