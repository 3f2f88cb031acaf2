"""The monthly review page: marts in, one self-contained HTML string out.

The page is a list of blocks. A block is a function ``ReviewInputs -> Section | None``
(None: nothing to show); ``render_review`` renders the blocks in order, so a later
report adds blocks (flags, trends, department pages) without touching these.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from functools import partial

import polars as pl

from reports import figures
from reports.html import (
    Column,
    Section,
    figure_html,
    fmt_datetime,
    fmt_float,
    fmt_int,
    fmt_minutes,
    fmt_pct,
    fmt_trimmed,
    join,
    paragraph,
    render_page,
    render_table,
)

TOP_JOBS = 20
F64, STR = pl.Float64, pl.String
CLUSTER_SCHEMA = {
    "cluster": STR, "capacity_gpu_hours": F64, "allocated_gpu_hours": F64,
    "active_gpu_hours": F64, "idle_gpu_hours": F64, "job_count": pl.Int64,
    "sample_coverage": F64, "jobs_without_samples": pl.Int64,
}  # fmt: skip
DEPARTMENT_SCHEMA = {
    "cluster": STR, "division": STR, "department": STR, "job_count": pl.Int64,
    "user_count": pl.Int64, "gpu_hours": F64, "active_gpu_hours": F64,
    "idle_gpu_hours": F64, "zero_util_gpu_hours": F64, "utilization": F64,
    "energy_kwh": F64, "queue_seconds_p50": F64, "queue_seconds_p95": F64,
    "share_of_capacity": F64,
}  # fmt: skip
JOB_SCHEMA = {
    "cluster": STR, "job_id": STR, "job_name": STR, "user_name": STR, "account": STR,
    "department": STR, "state": STR, "start_time": pl.Datetime("us"), "gpus": F64,
    "gpu_model": STR, "gpu_hours": F64, "utilization": F64, "utilization_signal": STR,
    "idle_gpu_hours": F64, "queue_seconds": F64,
}  # fmt: skip


def conform(frame: pl.DataFrame, schema: dict[str, pl.DataType], name: str) -> pl.DataFrame:
    """Keep only the columns the report reads; an empty frame becomes a typed empty frame."""
    if frame.is_empty():
        return pl.DataFrame(schema=schema)
    missing = sorted(set(schema) - set(frame.columns))
    if missing:
        raise ValueError(f"{name} frame lacks columns: {', '.join(missing)}")
    return frame.select(pl.col(column).cast(dtype) for column, dtype in schema.items())


@dataclass(frozen=True)
class ReviewInputs:
    month: date
    generated_from: str
    clusters: pl.DataFrame
    departments: pl.DataFrame
    jobs: pl.DataFrame

    @property
    def cluster_names(self) -> list[str]:
        frames = (self.clusters, self.departments, self.jobs)
        return sorted(set().union(*(f["cluster"].drop_nulls().to_list() for f in frames)))

    @property
    def multi_cluster(self) -> bool:
        return len(self.cluster_names) > 1


Block = Callable[[ReviewInputs], Section | None]


def _ratio(num: str, den: str) -> pl.Expr:
    return pl.when(pl.col(den) > 0).then(pl.col(num) / pl.col(den)).otherwise(None)


def headline_frame(clusters: pl.DataFrame, jobs: pl.DataFrame) -> pl.DataFrame:
    """One row per cluster: the headline numbers (ratios 0-1, queue times in seconds)."""
    queue = jobs.group_by("cluster").agg(
        pl.col("queue_seconds").quantile(0.5, interpolation="linear").alias("queue_p50_s"),
        pl.col("queue_seconds").quantile(0.95, interpolation="linear").alias("queue_p95_s"),
    )
    return (
        clusters.join(queue, on="cluster", how="left")
        .select(
            "cluster",
            "capacity_gpu_hours",
            _ratio("allocated_gpu_hours", "capacity_gpu_hours").alias("allocated_share"),
            _ratio("active_gpu_hours", "allocated_gpu_hours").alias("active_share"),
            pl.col("idle_gpu_hours").alias("workload_idle_gpu_hours"),
            (pl.col("capacity_gpu_hours") - pl.col("allocated_gpu_hours")).alias(
                "infra_idle_gpu_hours"
            ),
            "job_count",
            "queue_p50_s",
            "queue_p95_s",
            "sample_coverage",
            "jobs_without_samples",
        )
        .sort("cluster")
    )


fmt_hours = partial(fmt_float, decimals=1)
HEADLINE_ROWS = (
    ("capacity_gpu_hours", "capacity (GPU-hours)", fmt_hours),
    ("allocated_share", "allocated (% of capacity)", fmt_pct),
    ("active_share", "active (% of allocated)", fmt_pct),
    ("workload_idle_gpu_hours", "workload idle: allocated, not active (GPU-hours)", fmt_hours),
    ("infra_idle_gpu_hours", "infra idle: capacity − allocated (GPU-hours)", fmt_hours),
    ("job_count", "jobs", fmt_int),
    ("queue_p50_s", "queue time p50 (min)", fmt_minutes),
    ("queue_p95_s", "queue time p95 (min)", fmt_minutes),
    ("sample_coverage", "sample coverage (%)", fmt_pct),
    ("jobs_without_samples", "jobs without samples", fmt_int),
)


def headline_section(inputs: ReviewInputs) -> Section:
    """Metrics as rows, clusters as columns (values formatted here, escaped by the table)."""
    per_cluster = headline_frame(inputs.clusters, inputs.jobs).rows(named=True)
    if not per_cluster:
        empty = paragraph("No cluster rows.", class_="empty")
        return Section("headline", "Headline numbers", empty)
    table = pl.DataFrame(
        [
            {"metric": label, **{f"c{i}": fmt(r[key]) for i, r in enumerate(per_cluster)}}
            for key, label, fmt in HEADLINE_ROWS
        ]
    )
    columns = [Column("metric", "metric")] + [
        Column(f"c{i}", r["cluster"], numeric=True) for i, r in enumerate(per_cluster)
    ]
    return Section("headline", "Headline numbers", render_table(table, columns))


def no_jobs_section(inputs: ReviewInputs) -> Section | None:
    if not inputs.jobs.is_empty():
        return None
    where = ", ".join(inputs.cluster_names) or "any cluster"
    text = f"No jobs were recorded for {inputs.month:%Y-%m} on {where}."
    return Section("no-jobs", "No jobs", paragraph(text, class_="notice"), "compact")


def department_chart_section(inputs: ReviewInputs) -> Section:
    title = "GPU-hours per department: active and idle"
    if inputs.departments.is_empty():
        empty = paragraph("No department rows.", class_="empty")
        return Section("department-chart", title, empty)
    fig = figures.department_hours_figure(inputs.departments)
    note = paragraph("Hatched bars: jobs whose account maps to no department.", class_="caption")
    chart = figure_html(fig, "fig-department-hours")
    return Section("department-chart", title, join([chart, note]))


def utilization_section(inputs: ReviewInputs) -> Section:
    title = "Job utilization, weighted by GPU-hours"
    jobs = inputs.jobs
    if jobs.is_empty():
        return Section("utilization", title, paragraph("No jobs.", class_="empty"))
    unknown = jobs.filter(pl.col("utilization").is_null())
    note = paragraph(
        f"{unknown.height:,} of {jobs.height:,} jobs ({fmt_hours(unknown['gpu_hours'].sum())} "
        "GPU-hours) have no utilization signal and are not in the histogram.",
        class_="caption",
    )
    if unknown.height == jobs.height:
        empty = paragraph("No job has a utilization signal.", class_="empty")
        return Section("utilization", title, join([empty, note]))
    fig = figures.utilization_histogram_figure(jobs)
    return Section("utilization", title, join([figure_html(fig, "fig-utilization"), note]))


def _needs_mapping(row: dict) -> str | None:
    return "needs-mapping" if row["department"] == figures.UNMAPPED else None


def _with_cluster(inputs: ReviewInputs, columns: list[Column]) -> list[Column]:
    return ([Column("cluster", "cluster")] if inputs.multi_cluster else []) + columns


DEPARTMENT_COLUMNS = [
    Column("division", "division", wrap=True),
    Column("department", "department", figures.department_label, wrap=True),
    Column("job_count", "jobs", fmt_int, True),
    Column("user_count", "users", fmt_int, True),
    Column("gpu_hours", "GPU-hours", fmt_hours, True),
    Column("active_gpu_hours", "active GPU-hours", fmt_hours, True),
    Column("idle_gpu_hours", "idle GPU-hours", fmt_hours, True),
    Column("zero_util_gpu_hours", "zero-util GPU-hours", fmt_hours, True),
    Column("utilization", "utilization (%)", fmt_pct, True),
    Column("share_of_capacity", "share of capacity (%)", fmt_pct, True),
    Column("energy_kwh", "energy (kWh)", fmt_hours, True),
    Column("queue_seconds_p50", "queue p50 (min)", fmt_minutes, True),
    Column("queue_seconds_p95", "queue p95 (min)", fmt_minutes, True),
]


def department_table_section(inputs: ReviewInputs) -> Section:
    rows = inputs.departments.sort(
        ["cluster", "gpu_hours", "department"], descending=[False, True, False], nulls_last=True
    )
    columns = _with_cluster(inputs, DEPARTMENT_COLUMNS)
    body = render_table(rows, columns, row_class=_needs_mapping, empty="No department rows.")
    return Section("departments", "Departments", body)


JOB_COLUMNS = [
    Column("job_id", "job ID"),
    Column("job_name", "job name", wrap=True),
    Column("user_name", "user", wrap=True),
    Column("account", "account", wrap=True),
    Column("department", "department", figures.department_label, wrap=True),
    Column("state", "state"),
    Column("start_time", "start (UTC)", fmt_datetime),
    Column("gpus", "GPUs", fmt_trimmed, True),
    Column("gpu_model", "GPU model"),
    Column("gpu_hours", "GPU-hours", fmt_hours, True),
    Column("idle_gpu_hours", "idle GPU-hours", fmt_hours, True),
    Column("utilization", "utilization (%)", fmt_pct, True),
    Column("utilization_signal", "signal"),
]


def top_idle_jobs_section(inputs: ReviewInputs) -> Section:
    rows = inputs.jobs.sort(
        ["idle_gpu_hours", "gpu_hours", "cluster", "job_id"],
        descending=[True, True, False, False],
        nulls_last=True,
    ).head(TOP_JOBS)
    columns = _with_cluster(inputs, JOB_COLUMNS)
    body = render_table(rows, columns, row_class=_needs_mapping, empty="No jobs.")
    return Section("top-idle-jobs", f"Top {TOP_JOBS} jobs by idle GPU-hours", body)


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
    f"Department '{figures.UNMAPPED}' collects jobs whose account maps to no department: "
    "add a mapping to the config so that they are charged to the right place.",
)


def how_to_read_section(inputs: ReviewInputs) -> Section:
    body = join(paragraph(text) for text in HOW_TO_READ)
    return Section("how-to-read", "How to read this", body, "compact note")


REVIEW_BLOCKS: tuple[Block, ...] = (
    no_jobs_section,
    headline_section,
    how_to_read_section,
    department_chart_section,
    utilization_section,
    department_table_section,
    top_idle_jobs_section,
)


def _job_departments(departments: pl.DataFrame) -> pl.DataFrame:
    """Department rows only: the mart's unallocated-capacity row is infra idle, in the headline."""
    if "is_unallocated" not in departments.columns:
        return departments
    return departments.filter(~pl.col("is_unallocated").fill_null(False))


def render_review(
    month: date,
    generated_from: str,
    clusters: pl.DataFrame,
    departments: pl.DataFrame,
    jobs: pl.DataFrame,
    *,
    blocks: Sequence[Block] = REVIEW_BLOCKS,
) -> str:
    """The monthly review page for one month as one self-contained HTML document."""
    inputs = ReviewInputs(
        month=month,
        generated_from=generated_from,
        clusters=conform(clusters, CLUSTER_SCHEMA, "clusters"),
        departments=conform(_job_departments(departments), DEPARTMENT_SCHEMA, "departments"),
        jobs=conform(jobs, JOB_SCHEMA, "jobs"),
    )
    sections = [s for s in (block(inputs) for block in blocks) if s is not None]
    names = ", ".join(inputs.cluster_names) or "no clusters"
    title = f"GPU monthly review {month:%Y-%m}: {names}"
    subtitle = f"{month:%B %Y}, times in UTC. Generated from {generated_from}."
    return str(render_page(title, subtitle, sections))
