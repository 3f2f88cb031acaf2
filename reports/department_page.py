"""One page per department for its managers: ``departments/<dept>.html``.

The page reuses the review's blocks on the inputs narrowed to the department (its jobs,
flags, users and mart rows), plus its quota, its 12-month trend and a link back.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from reports import figures
from reports.data import ReviewInputs
from reports.html import Column, Section, figure_html, fmt_float, fmt_pct, render_page, table
from reports.paths import DEPARTMENT_DEPTH, REVIEW_FILE, department_file_name
from reports.sections.department_figures import department_figures
from reports.sections.departments import QUOTA_COLUMNS, department_columns, department_rows, quota_frame
from reports.sections.flags import flagged_jobs_values, user_table
from reports.sections.key_figures import key_figures_section
from reports.sections.overview import how_to_read_section, top_idle_jobs_values, utilization_values
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
        inputs,
        departments=departments,
        jobs=inputs.jobs.filter(mine),
        flags=inputs.flags.filter(mine),
        users=inputs.users.filter(mine),
        flag_months=inputs.flag_months.filter(mine),
        clusters=inputs.clusters.filter(pl.col("cluster").is_in(clusters)),
        states=inputs.states.filter(pl.col("cluster").is_in(clusters)),
    )


def summary_section(mine: ReviewInputs) -> Section:
    currency = mine.settings.currency or "currency"
    columns = [c for c in department_columns(mine, currency, linked=False) if c.key not in ("division", "department")]
    if not mine.multi_cluster:
        columns = [Column("cluster", "cluster")] + columns
    values = {"table": table(department_rows(mine), columns)}
    return Section("summary", "This month", "department/summary.html", values)


def department_quota_section(mine: ReviewInputs, department: str) -> Section:
    if mine.settings.quotas is None:
        return Section("quota", "Quota against use", "department/quota.html", {"table": None})
    rows = quota_frame(mine).filter(pl.col("department") == department)
    values = {"table": table(rows, QUOTA_COLUMNS[1:])}
    return Section("quota", "Quota against use", "department/quota.html", values, "compact")


def department_trend(departments: pl.DataFrame) -> pl.DataFrame:
    return (
        departments.group_by("month")
        .agg(pl.col(c).sum() for c in ("gpu_hours", "measured_gpu_hours", "active_gpu_hours", "idle_gpu_hours"))
        .with_columns(
            pl.when(pl.col("measured_gpu_hours") > 0)
            .then(pl.col("active_gpu_hours") / pl.col("measured_gpu_hours"))
            .alias("utilization")
        )
        .sort("month")
    )


TREND_COLUMNS = [
    Column("month", "month", lambda m: f"{m:%Y-%m}"),
    Column("gpu_hours", "GPU-hours", fmt_float, True),
    Column("utilization", "utilization (%)", fmt_pct, True),
    Column("idle_gpu_hours", "idle GPU-hours", fmt_float, True),
]


def trend_section(mine: ReviewInputs) -> Section:
    trend = department_trend(mine.departments)
    values = {"chart": None}
    if not trend.is_empty():
        chart = figure_html(monthly_hours_figure(trend), "fig-department-trend")
        values = {"chart": chart, "table": table(trend, TREND_COLUMNS)}
    return Section("trend", "Last 12 months", "department/trend.html", values)


def department_sections(mine: ReviewInputs, department: str) -> list[Section]:
    users = {"table": user_table(mine, mine.users, with_department=False)}
    flagged = flagged_jobs_values(mine, mine.flags, FLAGGED_ON_PAGE, with_department=False)
    utilization = utilization_values(mine.jobs, "fig-department-utilization")
    idle = top_idle_jobs_values(mine, mine.jobs)
    glance = key_figures_section(department_figures(mine), mine.month)
    return [
        *([glance] if glance is not None else []),
        summary_section(mine),
        department_quota_section(mine, department),
        trend_section(mine),
        Section("users", "Users", "department/users.html", users),
        Section("flagged-jobs", "Flagged jobs by wasted GPU-hours", "sections/flagged_jobs.html", flagged),
        Section("utilization", "Job utilization, weighted by GPU-hours", "sections/utilization.html", utilization),
        Section("top-idle-jobs", "Jobs by idle GPU-hours", "sections/top_idle_jobs.html", idle),
        how_to_read_section(mine),
    ]


def render_department_page(inputs: ReviewInputs, department: str) -> str:
    mine = narrow(inputs, department)
    return render_page(
        "department.html",
        department_sections(mine, department),
        inputs.settings.templates_dir,
        depth=DEPARTMENT_DEPTH,
        department=figures.department_label(department),
        month=inputs.month,
        generated_from=inputs.generated_from,
        review_href=f"../{REVIEW_FILE}",
    )


def render_department_pages(inputs: ReviewInputs) -> dict[str, str]:
    """File name (in ``departments/``) -> page, for every department of the month."""
    return {department_file_name(d): render_department_page(inputs, d) for d in department_names(inputs)}
