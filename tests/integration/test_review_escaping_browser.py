"""User-supplied strings stay text in a real browser: no script runs, the name shows literally."""

from datetime import date, datetime
from pathlib import Path

import polars as pl
import pytest

from reports.review import render_review
from tests.support.browser import load_page

pytestmark = [pytest.mark.integration]

EVIL = "<script>alert(1)</script>"


def _inputs() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    clusters = pl.DataFrame({"cluster": ["c1"], "capacity_gpu_hours": [100.0], "allocated_gpu_hours": [10.0],
                             "active_gpu_hours": [5.0], "idle_gpu_hours": [5.0], "job_count": [1],
                             "sample_coverage": [1.0], "jobs_without_samples": [0]})
    departments = pl.DataFrame({"cluster": ["c1"], "month": [date(2026, 10, 1)], "division": ["d"],
                                "department": [EVIL], "job_count": [1], "user_count": [1], "gpu_hours": [10.0],
                                "active_gpu_hours": [5.0], "idle_gpu_hours": [5.0], "zero_util_gpu_hours": [0.0],
                                "utilization": [0.5], "energy_kwh": [1.0], "queue_seconds_p50": [0.0],
                                "queue_seconds_p95": [0.0], "share_of_capacity": [0.1]})
    jobs = pl.DataFrame({"cluster": ["c1"], "job_id": ["1"], "job_name": [EVIL], "user_name": ['a&b"c'],
                         "account": ["acct"], "department": [EVIL], "division": ["d"], "partition_name": ["gpu"],
                         "state": ["COMPLETED"], "start_time": [datetime(2026, 10, 1)],
                         "end_time": [datetime(2026, 10, 1, 10)], "gpus": [1.0], "gpu_model": ["H100"],
                         "gpu_hours": [10.0], "utilization": [0.5], "utilization_signal": ["sm_active"],
                         "idle_gpu_hours": [5.0], "zero_util_gpu_hours": [0.0], "queue_seconds": [0.0],
                         "energy_kwh": [1.0]})
    return clusters, departments, jobs


def test_script_in_job_name_shows_as_text(tmp_path: Path) -> None:
    clusters, departments, jobs = _inputs()
    html = render_review(month=date(2026, 10, 1), generated_from="test", clusters=clusters,
                         departments=departments, jobs=jobs)
    page_file = tmp_path / "review.html"
    page_file.write_text(html)
    page = load_page(page_file, tmp_path / "shot.png")
    assert page.dialogs == []
    assert page.console_errors == [] and page.page_errors == []
    assert EVIL in page.text
    assert 'a&b"c' in page.text
