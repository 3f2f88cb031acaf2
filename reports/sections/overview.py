"""The review's general blocks: no-jobs notice, department chart, utilization histogram,
top idle jobs, data coverage and the how-to-read note."""

from __future__ import annotations

from functools import partial

import polars as pl

from reports import figures
from reports.data import ReviewInputs
from reports.html import (
    Column,
    Section,
    figure_html,
    fmt_datetime,
    fmt_float,
    fmt_int,
    fmt_pct,
    fmt_trimmed,
    table,
)

TOP_JOBS = 20
fmt_hours = partial(fmt_float, decimals=1)


def no_jobs_section(inputs: ReviewInputs) -> Section | None:
    if not inputs.jobs.is_empty():
        return None
    values = {"month": f"{inputs.month:%Y-%m}", "clusters": inputs.cluster_names}
    return Section("no-jobs", "No jobs", "sections/no_jobs.html", values, "compact")


def department_chart_section(inputs: ReviewInputs) -> Section:
    departments = inputs.this_month(inputs.departments)
    chart = None
    if not departments.is_empty():
        chart = figure_html(figures.department_hours_figure(departments), "fig-department-hours")
    title = "GPU-hours per department: active and idle"
    return Section("department-chart", title, "sections/department_chart.html", {"chart": chart})


def utilization_values(jobs: pl.DataFrame, div_id: str) -> dict:
    """The histogram of job utilization (None: no job has a signal) and the jobs left out of it
    (``jobs`` None: no jobs at all)."""
    if jobs.is_empty():
        return {"jobs": None}
    unknown = jobs.filter(pl.col("utilization").is_null())
    chart = None if unknown.height == jobs.height else figure_html(figures.utilization_histogram_figure(jobs), div_id)
    return {
        "chart": chart,
        "jobs": f"{jobs.height:,}",
        "unmeasured": f"{unknown.height:,}",
        "unmeasured_gpu_hours": fmt_hours(unknown["gpu_hours"].sum()),
    }


def utilization_section(inputs: ReviewInputs) -> Section:
    values = utilization_values(inputs.jobs, "fig-utilization")
    return Section("utilization", "Job utilization, weighted by GPU-hours", "sections/utilization.html", values)


def _needs_mapping(row: dict) -> str | None:
    return "needs-mapping" if row["department"] == figures.UNMAPPED else None


JOB_COLUMNS = [
    Column("job_id", "job ID", wrap=True),
    Column("job_name", "job name", wrap=True),
    Column("user_name", "user", wrap=True),
    Column("account", "account", wrap=True),
    Column("department", "department", figures.department_label, wrap=True),
    Column("partition_name", "partition", wrap=True),
    Column("state", "state"),
    Column("start_time", "start (UTC)", fmt_datetime),
    Column("gpus", "GPUs", fmt_trimmed, True),
    Column("gpu_model", "GPU model"),
    Column("gpu_hours", "GPU-hours", fmt_hours, True),
    Column("idle_gpu_hours", "idle GPU-hours", fmt_hours, True),
    Column("utilization", "utilization (%)", fmt_pct, True),
    Column("utilization_signal", "signal"),
]


def top_idle_jobs_values(inputs: ReviewInputs, jobs: pl.DataFrame) -> dict:
    rows = jobs.sort(
        ["idle_gpu_hours", "gpu_hours", "cluster", "job_id"], descending=[True, True, False, False], nulls_last=True
    ).head(TOP_JOBS)
    columns = ([Column("cluster", "cluster")] if inputs.multi_cluster else []) + JOB_COLUMNS
    return {"table": table(rows, columns, row_class=_needs_mapping)}


def top_idle_jobs_section(inputs: ReviewInputs) -> Section:
    values = top_idle_jobs_values(inputs, inputs.jobs)
    return Section("top-idle-jobs", f"Top {TOP_JOBS} jobs by idle GPU-hours", "sections/top_idle_jobs.html", values)


def coverage_frame(inputs: ReviewInputs) -> pl.DataFrame:
    """Per cluster: samples present / expected (jobs, and all GPU-hours), jobs without samples."""
    gpus = inputs.hourly.group_by("cluster").agg(
        (pl.col("n_samples").sum() / pl.col("expected_samples").sum()).clip(upper_bound=1.0).alias("gpu_coverage")
    )
    unsampled = (
        inputs.jobs.filter(pl.col("n_samples").fill_null(0) == 0)
        .group_by("cluster")
        .agg(pl.col("gpu_hours").sum().alias("unsampled_gpu_hours"))
    )
    return (
        inputs.this_month(inputs.clusters)
        .select("cluster", "job_count", "sample_coverage", "jobs_without_samples")
        .join(gpus, on="cluster", how="left")
        .join(unsampled, on="cluster", how="left")
        .with_columns(
            pl.col("unsampled_gpu_hours").fill_null(0.0),
            pl.when(pl.col("gpu_coverage").is_finite()).then(pl.col("gpu_coverage")),
        )
        .sort("cluster")
    )


COVERAGE_COLUMNS = [
    Column("cluster", "cluster"),
    Column("sample_coverage", "samples present, jobs (% of expected)", fmt_pct, True),
    Column("gpu_coverage", "samples present, all GPU-hours (% of expected)", fmt_pct, True),
    Column("job_count", "jobs", fmt_int, True),
    Column("jobs_without_samples", "jobs without samples", fmt_int, True),
    Column("unsampled_gpu_hours", "their GPU-hours", fmt_hours, True),
]


def coverage_section(inputs: ReviewInputs) -> Section:
    values = {"table": table(coverage_frame(inputs), COVERAGE_COLUMNS)}
    return Section("coverage", "Data coverage", "sections/coverage.html", values, "compact")


def how_to_read_section(inputs: ReviewInputs) -> Section:
    values = {"unmapped": figures.UNMAPPED}
    return Section("how-to-read", "How to read this", "sections/how_to_read.html", values, "compact note")
