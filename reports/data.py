"""What a review renders from: typed frames (the asset reads them from the marts) and settings.

Reports never read the warehouse or the config: ``build_inputs`` takes the frames and the
few settings the pages need (prices, quotas, thresholds), conforms each frame to the
columns the pages read, so a missing column is an error and an empty frame is typed, and
prices them once at the dated list prices (``reports.pricing``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from types import MappingProxyType

import polars as pl

from reports.columns import (
    CAPACITY_STATE_SCHEMA,
    CLUSTER_SCHEMA,
    DEPARTMENT_SCHEMA,
    FLAG_MONTH_SCHEMA,
    FLAG_SCHEMA,
    HOURLY_SCHEMA,
    JOB_SCHEMA,
    MODEL_HOUR_SCHEMA,
    OPTIONAL_JOB_COLUMNS,
    RUN_SCHEMA,
    USER_SCHEMA,
    conform,
)
from reports.costs import SEGMENT_SCHEMA, undated_segments, with_job_costs
from reports.pricing import model_months

TREND_MONTHS = 12


def previous_month(month: date) -> date:
    return date(month.year - (month.month == 1), (month.month - 2) % 12 + 1, 1)


def first_trend_month(month: date) -> date:
    """The first of the ``TREND_MONTHS`` months ending with ``month``."""
    first = month
    for _ in range(TREND_MONTHS - 1):
        first = previous_month(first)
    return first


def next_month(month: date) -> date:
    return date(month.year + (month.month == 12), month.month % 12 + 1, 1)


def hours_in_month(month: date) -> float:
    return (next_month(month) - month).days * 24.0


@dataclass(frozen=True)
class ReviewSettings:
    """The config values the pages use, passed in plain (reports do not import the config).

    List prices of one GPU-hour per GPU model (MIG slices are priced by their base model,
    see ``reports.costs``), either ``prices`` (one price for all time) or ``price_segments``
    (dated: ``reports.costs.SEGMENT_SCHEMA``, the chargeback's price segments), not both;
    ``quotas``: GPUs per department, ``None`` when no quotas are configured;
    ``templates_dir``: a site's page templates, which win over the packaged ones (``reports.templating``).
    """

    currency: str = ""
    prices: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    price_segments: pl.DataFrame | None = field(default=None, compare=False)
    quotas: Mapping[str, float] | None = None
    overcommit_ratio: float = 1.0
    low_efficiency_gpu_hours: float = 50.0
    low_efficiency_utilization: float = 0.25
    templates_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.prices and self.price_segments is not None:
            raise ValueError("ReviewSettings takes prices or price_segments, not both")

    @property
    def segments(self) -> pl.DataFrame:
        """The price segments to price with (``prices``: one segment for all time)."""
        if self.price_segments is None:
            return undated_segments(self.prices)
        return conform(self.price_segments, SEGMENT_SCHEMA, "price_segments")


@dataclass(frozen=True)
class ReviewInputs:
    """Frames of one review. ``clusters``, ``departments``, ``models``, ``flag_months`` and
    ``states`` hold up to 12 months (trends, previous month); the other frames hold the reviewed
    month only."""

    month: date
    generated_from: str
    clusters: pl.DataFrame
    departments: pl.DataFrame
    jobs: pl.DataFrame
    hourly: pl.DataFrame
    models: pl.DataFrame
    flags: pl.DataFrame
    users: pl.DataFrame
    settings: ReviewSettings
    flag_months: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=FLAG_MONTH_SCHEMA))
    states: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=CAPACITY_STATE_SCHEMA))

    def this_month(self, frame: pl.DataFrame) -> pl.DataFrame:
        return frame.filter(pl.col("month") == self.month)

    @property
    def cluster_names(self) -> list[str]:
        frames = (self.this_month(self.clusters), self.this_month(self.departments), self.jobs)
        return sorted(set().union(*(f["cluster"].drop_nulls().to_list() for f in frames)))

    @property
    def multi_cluster(self) -> bool:
        return len(self.cluster_names) > 1


def _job_departments(departments: pl.DataFrame | None) -> pl.DataFrame | None:
    """Department rows only: the mart's unallocated-capacity row is infra idle (headline)."""
    if departments is None or "is_unallocated" not in departments.columns:
        return departments
    return departments.filter(~pl.col("is_unallocated").fill_null(False))


def _with_month(frame: pl.DataFrame | None, month: date) -> pl.DataFrame | None:
    """Frames of one month may come without ``month``: they are that month's rows."""
    if frame is None or frame.is_empty() or "month" in frame.columns:
        return frame
    return frame.with_columns(pl.lit(month).alias("month"))


def _flag_months(flag_months: pl.DataFrame | None, users: pl.DataFrame, month: date) -> pl.DataFrame:
    """Flagged runs per cluster, month and department; without ``flag_months``, the reviewed
    month's from the users frame (no earlier months then)."""
    if flag_months is not None:
        return conform(flag_months, FLAG_MONTH_SCHEMA, "flag_months")
    summed = users.group_by("cluster", "department").agg(pl.col("flagged_job_count", "wasted_gpu_hours").sum())
    return conform(summed.with_columns(month=pl.lit(month)), FLAG_MONTH_SCHEMA, "users")


def build_inputs(
    month: date,
    generated_from: str,
    *,
    clusters: pl.DataFrame | None = None,
    departments: pl.DataFrame | None = None,
    jobs: pl.DataFrame | None = None,
    hourly: pl.DataFrame | None = None,
    runs: pl.DataFrame | None = None,
    model_hours: pl.DataFrame | None = None,
    flags: pl.DataFrame | None = None,
    users: pl.DataFrame | None = None,
    flag_months: pl.DataFrame | None = None,
    states: pl.DataFrame | None = None,
    settings: ReviewSettings | None = None,
) -> ReviewInputs:
    """``runs`` and ``model_hours``: 12 months (``RUN_SCHEMA``, ``MODEL_HOUR_SCHEMA``), summed
    into ``ReviewInputs.models``; jobs, flags, users and models are priced here. ``flag_months``
    (``FLAG_MONTH_SCHEMA``) and ``states`` (``CAPACITY_STATE_SCHEMA``): 12 months, optional."""
    first = first_trend_month(month)
    settings = settings or ReviewSettings()
    segments = settings.segments

    def window(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.filter(pl.col("month").is_between(first, month))

    job_schema = JOB_SCHEMA | {k: v for k, v in OPTIONAL_JOB_COLUMNS.items() if jobs is not None and k in jobs.columns}
    priced_jobs = with_job_costs(conform(jobs, job_schema, "jobs"), segments, month)
    models = model_months(
        window(conform(_with_month(runs, month), RUN_SCHEMA, "runs")),
        window(conform(_with_month(model_hours, month), MODEL_HOUR_SCHEMA, "model_hours")),
        segments,
    )
    return ReviewInputs(
        month=month,
        generated_from=generated_from,
        clusters=window(conform(_with_month(clusters, month), CLUSTER_SCHEMA, "clusters")),
        departments=window(
            conform(_with_month(_job_departments(departments), month), DEPARTMENT_SCHEMA, "departments")
        ),
        jobs=priced_jobs,
        hourly=conform(hourly, HOURLY_SCHEMA, "hourly"),
        models=models,
        flags=conform(flags, FLAG_SCHEMA, "flags"),
        users=conform(users, USER_SCHEMA, "users"),
        settings=settings,
        flag_months=window(_flag_months(flag_months, conform(users, USER_SCHEMA, "users"), month)),
        states=window(conform(states, CAPACITY_STATE_SCHEMA, "states")),
    )
