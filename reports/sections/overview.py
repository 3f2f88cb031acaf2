"""The review's general blocks: no-jobs notice, department chart, utilization histogram,
top idle jobs, data coverage and the how-to-read note."""

from __future__ import annotations

from functools import partial

import polars as pl

from reports import figures
from reports.data import ReviewInputs
from reports.html import (
    Column, Section, figure_html, fmt_datetime, fmt_float, fmt_int, fmt_pct, fmt_trimmed, join,
    paragraph, render_table,
)  # fmt: skip

TOP_JOBS = 20
fmt_hours = partial(fmt_float, decimals=1)


def no_jobs_section(inputs: ReviewInputs) -> Section | None:
    if not inputs.jobs.is_empty():
        return None
    where = ", ".join(inputs.cluster_names) or "any cluster"
    text = f"No jobs were recorded for {inputs.month:%Y-%m} on {where}."
    return Section("no-jobs", "No jobs", paragraph(text, class_="notice"), "compact")


def department_chart_section(inputs: ReviewInputs) -> Section:
    title = "GPU-hours per department: active and idle"
    departments = inputs.this_month(inputs.departments)
    if departments.is_empty():
        return Section("department-chart", title, paragraph("No department rows.", class_="empty"))
    note = paragraph("Hatched bars: jobs whose account maps to no department.", class_="caption")
    chart = figure_html(figures.department_hours_figure(departments), "fig-department-hours")
    return Section("department-chart", title, join([chart, note]))


def utilization_body(jobs: pl.DataFrame, div_id: str):
    unknown = jobs.filter(pl.col("utilization").is_null())
    note = paragraph(
        f"{unknown.height:,} of {jobs.height:,} jobs ({fmt_hours(unknown['gpu_hours'].sum())} "
        "GPU-hours) have no utilization signal and are not in the histogram.",
        class_="caption",
    )
    if unknown.height == jobs.height:
        return join([paragraph("No job has a utilization signal.", class_="empty"), note])
    return join([figure_html(figures.utilization_histogram_figure(jobs), div_id), note])


def utilization_section(inputs: ReviewInputs) -> Section:
    title = "Job utilization, weighted by GPU-hours"
    if inputs.jobs.is_empty():
        return Section("utilization", title, paragraph("No jobs.", class_="empty"))
    return Section("utilization", title, utilization_body(inputs.jobs, "fig-utilization"))


def _needs_mapping(row: dict) -> str | None:
    return "needs-mapping" if row["department"] == figures.UNMAPPED else None


JOB_COLUMNS = [
    Column("job_id", "job ID"),
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


def top_idle_jobs_table(inputs: ReviewInputs, jobs: pl.DataFrame):
    rows = jobs.sort(
        ["idle_gpu_hours", "gpu_hours", "cluster", "job_id"], descending=[True, True, False, False], nulls_last=True
    ).head(TOP_JOBS)
    columns = ([Column("cluster", "cluster")] if inputs.multi_cluster else []) + JOB_COLUMNS
    return render_table(rows, columns, row_class=_needs_mapping, empty="No jobs.")


def top_idle_jobs_section(inputs: ReviewInputs) -> Section:
    body = top_idle_jobs_table(inputs, inputs.jobs)
    return Section("top-idle-jobs", f"Top {TOP_JOBS} jobs by idle GPU-hours", body)


def coverage_frame(inputs: ReviewInputs) -> pl.DataFrame:
    """Per cluster: samples present / expected (jobs, and all GPU-hours), jobs without samples."""
    gpus = inputs.hourly.group_by("cluster").agg(
        (pl.col("n_samples").sum() / pl.col("expected_samples").sum()).clip(upper_bound=1.0).alias("gpu_coverage")
    )
    unsampled = inputs.jobs.filter(pl.col("n_samples").fill_null(0) == 0).group_by("cluster").agg(
        pl.col("gpu_hours").sum().alias("unsampled_gpu_hours")
    )
    return (
        inputs.this_month(inputs.clusters)
        .select("cluster", "job_count", "sample_coverage", "jobs_without_samples")
        .join(gpus, on="cluster", how="left").join(unsampled, on="cluster", how="left")
        .with_columns(pl.col("unsampled_gpu_hours").fill_null(0.0),
                      pl.when(pl.col("gpu_coverage").is_finite()).then(pl.col("gpu_coverage")))
        .sort("cluster")
    )  # fmt: skip


COVERAGE_COLUMNS = [
    Column("cluster", "cluster"),
    Column("sample_coverage", "samples present, jobs (% of expected)", fmt_pct, True),
    Column("gpu_coverage", "samples present, all GPU-hours (% of expected)", fmt_pct, True),
    Column("job_count", "jobs", fmt_int, True),
    Column("jobs_without_samples", "jobs without samples", fmt_int, True),
    Column("unsampled_gpu_hours", "their GPU-hours", fmt_hours, True),
]


def coverage_section(inputs: ReviewInputs) -> Section:
    note = paragraph(
        "Expected samples: one per GPU per scrape step. Jobs without samples have no "
        "utilization: they are in the GPU-hours and costs but not in utilization or idle.",
        class_="caption",
    )
    body = render_table(coverage_frame(inputs), COVERAGE_COLUMNS, empty="No cluster rows.")
    return Section("coverage", "Data coverage", join([body, note]), "compact")


HOW_TO_READ = (
    "Utilization is the best signal present for each job: DCGM SM_ACTIVE (how busy the "
    "streaming multiprocessors are) where it is exported, else GR_ENGINE_ACTIVE (how long "
    "the compute engine is busy), else GPU_UTIL. The job table's 'signal' column says "
    "which one a job got.",
    "GPU_UTIL alone misleads: it counts the time in which any kernel at all is running, "
    "however little of the GPU that kernel uses. A job that keeps one small kernel going "
    "reads about 80% GPU_UTIL while its SMs are 0.6% active.",
    "Active GPU-hours are allocated GPU-hours weighted by utilization; workload idle is "
    "what jobs held but did not use; infra idle is capacity no job held. 'n/a' means "
    "no value: no utilization signal, or nothing to divide by.",
    "Flagged jobs carry the reasons the rules found and a recommendation; wasted GPU-hours "
    "count a job once (its largest reason). Costs are GPU-hours at the list price of each GPU "
    "model in effect when they happened (a price change within the month splits a job's "
    "GPU-hours by seconds); partition and QOS multipliers apply only in the chargeback, so "
    "these are list-price costs, not the amounts billed.",
    f"Department '{figures.UNMAPPED}' collects jobs whose account maps to no department: "
    "add a mapping to the config so that they are charged to the right place.",
)


def how_to_read_section(inputs: ReviewInputs) -> Section:
    body = join(paragraph(text) for text in HOW_TO_READ)
    return Section("how-to-read", "How to read this", body, "compact note")
