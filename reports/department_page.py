"""One page per department for its managers: ``departments/<dept>.html``.

The page reuses the review's blocks on the inputs narrowed to the department (its jobs,
flags, users and mart rows), plus its quota, its 12-month trend and a link back.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from reports import figures
from reports.data import ReviewInputs
from reports.html import (
    Column, Section, figure_html, fmt_float, fmt_pct, join, link, paragraph, render_page, render_table,
)  # fmt: skip
from reports.paths import REVIEW_FILE, department_file_name
from reports.sections.departments import QUOTA_COLUMNS, department_columns, department_rows, quota_frame
from reports.sections.flags import flagged_jobs_table, user_table
from reports.sections.overview import how_to_read_section, top_idle_jobs_table, utilization_body
from reports.time_figures import monthly_hours_figure

FLAGGED_ON_PAGE = 50


def department_names(inputs: ReviewInputs) -> list[str]:
    """Departments with a page: every department with rows in the reviewed month."""
    return sorted(set(inputs.this_month(inputs.departments)["department"].drop_nulls()))


def narrow(inputs: ReviewInputs, department: str) -> ReviewInputs:
    """The inputs of one department (cluster rows: the clusters it used this month)."""
    mine = pl.col("department") == department
    departments = inputs.departments.filter(mine)
    clusters = set(inputs.this_month(departments)["cluster"].to_list())
    return replace(
        inputs, departments=departments, jobs=inputs.jobs.filter(mine), flags=inputs.flags.filter(mine),
        users=inputs.users.filter(mine), clusters=inputs.clusters.filter(pl.col("cluster").is_in(clusters)),
    )  # fmt: skip


def summary_section(mine: ReviewInputs) -> Section:
    currency = mine.settings.currency or "currency"
    columns = [c for c in department_columns(mine, currency, linked=False) if c.key not in ("division", "department")]
    if not mine.multi_cluster:
        columns = [Column("cluster", "cluster")] + columns
    return Section("summary", "This month", render_table(department_rows(mine), columns, empty="No usage."))


def department_quota_section(mine: ReviewInputs, department: str) -> Section:
    if mine.settings.quotas is None:
        return Section("quota", "Quota against use", paragraph("No quotas are configured.", class_="empty"))
    rows = quota_frame(mine).filter(pl.col("department") == department)
    note = paragraph("Use is a month average (GPU-hours / hours in the month); use above the quota is "
                     "borrowed from other departments' idle quota.", class_="caption")  # fmt: skip
    return Section("quota", "Quota against use", join([render_table(rows, QUOTA_COLUMNS[1:]), note]), "compact")


def department_trend(departments: pl.DataFrame) -> pl.DataFrame:
    return (
        departments.group_by("month")
        .agg(pl.col(c).sum() for c in ("gpu_hours", "measured_gpu_hours", "active_gpu_hours", "idle_gpu_hours"))
        .with_columns(pl.when(pl.col("measured_gpu_hours") > 0)
                      .then(pl.col("active_gpu_hours") / pl.col("measured_gpu_hours")).alias("utilization"))
        .sort("month")
    )  # fmt: skip


TREND_COLUMNS = [
    Column("month", "month", lambda m: f"{m:%Y-%m}"),
    Column("gpu_hours", "GPU-hours", fmt_float, True),
    Column("utilization", "utilization (%)", fmt_pct, True),
    Column("idle_gpu_hours", "idle GPU-hours", fmt_float, True),
]


def trend_section(mine: ReviewInputs) -> Section:
    trend = department_trend(mine.departments)
    if trend.is_empty():
        return Section("trend", "Last 12 months", paragraph("No monthly rows.", class_="empty"))
    chart = figure_html(monthly_hours_figure(trend), "fig-department-trend")
    return Section("trend", "Last 12 months", join([chart, render_table(trend, TREND_COLUMNS)]))


def department_sections(mine: ReviewInputs, department: str) -> list[Section]:
    flagged = flagged_jobs_table(mine, mine.flags, FLAGGED_ON_PAGE, with_department=False)
    utilization = (utilization_body(mine.jobs, "fig-department-utilization") if not mine.jobs.is_empty()
                   else paragraph("No jobs.", class_="empty"))  # fmt: skip
    return [
        summary_section(mine),
        department_quota_section(mine, department),
        trend_section(mine),
        Section("users", "Users", user_table(mine, mine.users, with_department=False)),
        Section("flagged-jobs", "Flagged jobs by wasted GPU-hours", flagged),
        Section("utilization", "Job utilization, weighted by GPU-hours", utilization),
        Section("top-idle-jobs", "Jobs by idle GPU-hours", top_idle_jobs_table(mine, mine.jobs)),
        how_to_read_section(mine),
    ]


def render_department_page(inputs: ReviewInputs, department: str) -> str:
    mine = narrow(inputs, department)
    label = figures.department_label(department)
    title = f"GPU use of {label}, {inputs.month:%Y-%m}"
    subtitle = f"{inputs.month:%B %Y}, times in UTC. Generated from {inputs.generated_from}."
    back = link("← monthly review", f"../{REVIEW_FILE}")
    return str(render_page(title, subtitle, department_sections(mine, department), links=[back]))


def render_department_pages(inputs: ReviewInputs) -> dict[str, str]:
    """File name (in ``departments/``) -> page, for every department of the month."""
    return {department_file_name(d): render_department_page(inputs, d) for d in department_names(inputs)}
