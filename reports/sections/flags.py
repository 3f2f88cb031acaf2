"""Flagged jobs and users: the costliest waste with reasons and recommendations, and the
per-user consumption table (from marts.fct_job_flags and marts.mart_user_monthly)."""

from __future__ import annotations

from functools import partial

import polars as pl

from contracts.flags import SEVERITY_RANK
from reports import figures
from reports.data import ReviewInputs
from reports.html import Column, Section, fmt_float, fmt_int, fmt_pct, fmt_trimmed, table
from reports.sections.departments import low_efficiency_rule

TOP_FLAGGED = 25
TOP_USERS = 15
RUN = ["cluster", "job_id", "job_id_raw", "start_time"]
fmt_hours = partial(fmt_float, decimals=1)
fmt_money = partial(fmt_float, decimals=2)


def flagged_runs(flags: pl.DataFrame) -> pl.DataFrame:
    """One row per flagged job run: its reasons (most severe first), its worst severity,
    the waste of its worst reason (a job is counted once) and the recommendations."""
    ranked = flags.with_columns(
        pl.col("severity")
        .replace_strict(SEVERITY_RANK, default=len(SEVERITY_RANK), return_dtype=pl.Int8)
        .alias("_rank")
    ).sort([*RUN, "_rank", "reason"], nulls_last=True)
    first = pl.col
    return (
        ranked.group_by(RUN, maintain_order=True)
        .agg(
            *(
                first(c).first()
                for c in (
                    "user_name",
                    "account",
                    "department",
                    "partition_name",
                    "job_name",
                    "gpus",
                    "gpu_model",
                    "gpu_hours",
                    "utilization",
                    "idle_gpu_hours",
                    "idle_cost",
                    "severity",
                )
            ),
            pl.col("reason").unique(maintain_order=True).str.join(", ").alias("reasons"),
            pl.col("wasted_gpu_hours").max(),
            pl.col("detail").drop_nulls().unique(maintain_order=True).str.join("; ").alias("details"),
            pl.col("recommendation").drop_nulls().unique(maintain_order=True).str.join(" ").alias("recommendations"),
        )
        .sort(["wasted_gpu_hours", "cluster", "job_id"], descending=[True, False, False], nulls_last=True)
    )


def flagged_job_columns(inputs: ReviewInputs, with_department: bool = True) -> list[Column]:
    """Fits a landscape page: account, partition and GPU model are in flagged_jobs.csv."""
    currency = inputs.settings.currency or "currency"
    columns = [
        Column("job_id", "job ID", wrap=True),
        Column("job_name", "job name", wrap=True),
        Column("user_name", "user", wrap=True),
        *([Column("department", "department", figures.department_label, wrap=True)] if with_department else []),
        Column("gpus", "GPUs", fmt_trimmed, True),
        Column("gpu_hours", "GPU-hours", fmt_hours, True),
        Column("utilization", "utilization (%)", fmt_pct, True),
        Column("wasted_gpu_hours", "wasted GPU-hours", fmt_hours, True),
        Column("idle_cost", f"idle cost ({currency})", fmt_money, True),
        Column("severity", "severity"),
        Column("reasons", "reasons", words=True),
        Column("recommendations", "recommendation", prose=True),
        Column("details", "evidence", prose=True),
    ]
    return ([Column("cluster", "cluster")] if inputs.multi_cluster else []) + columns


def flagged_jobs_values(inputs: ReviewInputs, flags: pl.DataFrame, limit: int, with_department: bool = True) -> dict:
    """The ``limit`` costliest flagged runs; ``total`` (all runs) only when some are left out."""
    runs = flagged_runs(flags)
    shown = table(runs.head(limit), flagged_job_columns(inputs, with_department))
    return {"table": shown, "shown": limit, "total": f"{runs.height:,}" if runs.height > limit else None}


def top_flagged_jobs_section(inputs: ReviewInputs) -> Section:
    values = flagged_jobs_values(inputs, inputs.flags, TOP_FLAGGED)
    title = f"Top {TOP_FLAGGED} flagged jobs by wasted GPU-hours"
    return Section("top-flagged-jobs", title, "sections/flagged_jobs.html", values)


def user_columns(inputs: ReviewInputs, with_department: bool = True) -> list[Column]:
    currency = inputs.settings.currency or "currency"
    columns = [
        Column("user_name", "user", wrap=True),
        *([Column("department", "department", figures.department_label, wrap=True)] if with_department else []),
        Column("job_count", "jobs", fmt_int, True),
        Column("gpu_hours", "GPU-hours", fmt_hours, True),
        Column("utilization", "utilization (%)", fmt_pct, True),
        Column("idle_gpu_hours", "idle GPU-hours", fmt_hours, True),
        Column("idle_cost", f"idle cost ({currency})", fmt_money, True),
        Column("zero_util_gpu_hours", "zero-util GPU-hours", fmt_hours, True),
        Column("flagged_job_count", "flagged jobs", fmt_int, True),
        Column("wasted_gpu_hours", "wasted GPU-hours", fmt_hours, True),
        Column("notes", "notes", wrap=True),
    ]
    return ([Column("cluster", "cluster")] if inputs.multi_cluster else []) + columns


def with_notes(users: pl.DataFrame) -> pl.DataFrame:
    """The user's flags in words: zero-util over the threshold, low efficiency."""
    return users.with_columns(
        pl.concat_str(
            pl.when(pl.col("is_zero_util_over_threshold")).then(pl.lit("zero-util over threshold")),
            pl.when(pl.col("is_low_efficiency")).then(pl.lit("low efficiency")),
            separator="; ",
            ignore_nulls=True,
        ).alias("notes")
    )


def top_users_section(inputs: ReviewInputs) -> Section:
    users = with_notes(inputs.users).filter(pl.col("wasted_gpu_hours").fill_null(0) > 0)
    rows = users.sort(["wasted_gpu_hours", "cluster", "user_name"], descending=[True, False, False]).head(TOP_USERS)
    values = {"table": table(rows, user_columns(inputs))}
    return Section("top-users", f"Top {TOP_USERS} users by wasted GPU-hours", "sections/top_users.html", values)


def user_table(inputs: ReviewInputs, users: pl.DataFrame, with_department: bool = True):
    rows = with_notes(users).sort(
        ["gpu_hours", "cluster", "user_name"], descending=[True, False, False], nulls_last=True
    )
    return table(rows, user_columns(inputs, with_department))


def users_section(inputs: ReviewInputs) -> Section:
    values = low_efficiency_rule(inputs) | {"table": user_table(inputs, inputs.users)}
    return Section("users", "Consumption per user", "sections/users.html", values)
