"""The review's scheduler table: Slurm and Kubernetes side by side and summed, only when a
month has both."""

from __future__ import annotations

import polars as pl
import pytest

from reports.review import render_review
from reports.sections.usage import scheduler_frame, schedulers_section
from tests.unit.reports_frames import jobs_frame, make_inputs


def mixed_jobs() -> pl.DataFrame:
    jobs = jobs_frame().filter(pl.col("cluster") == "alpha")
    kube = pl.Series("scheduler", ["kubernetes" if i % 2 else "slurm" for i in range(jobs.height)])
    return jobs.with_columns(kube)


def test_both_schedulers_side_by_side_and_summed() -> None:
    jobs = mixed_jobs()
    inputs = make_inputs(jobs=jobs)
    frame = scheduler_frame(inputs).filter(pl.col("cluster") == "alpha")
    assert frame["scheduler"].to_list() == ["kubernetes", "slurm", "all"]
    rows = {r["scheduler"]: r for r in frame.iter_rows(named=True)}
    assert rows["all"]["gpu_hours"] == pytest.approx(rows["slurm"]["gpu_hours"] + rows["kubernetes"]["gpu_hours"])
    assert rows["all"]["job_count"] == jobs.height
    assert rows["all"]["gpu_hours"] == pytest.approx(jobs["gpu_hours"].sum())
    section = schedulers_section(inputs)
    assert section is not None and "kubernetes" in section.render_body() and "Schedulers" in render_review(inputs)


def test_no_table_for_one_scheduler_or_frames_without_the_column() -> None:
    assert schedulers_section(make_inputs(jobs=jobs_frame().with_columns(scheduler=pl.lit("slurm")))) is None
    assert schedulers_section(make_inputs()) is None
    assert "Schedulers" not in render_review(make_inputs())
