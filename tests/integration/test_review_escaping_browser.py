"""User-supplied strings stay text in a real browser: no script runs, the name shows
literally, on the review page and on the department page."""

from datetime import date, datetime
from pathlib import Path

import polars as pl
import pytest

from reports import build_inputs, render_department_pages, render_review, write_department_pages, write_review
from reports.paths import department_file_name
from tests.support.browser import load_page
from transforms.fct_job_flags import SCHEMA as FLAG_SCHEMA

pytestmark = [pytest.mark.integration]

EVIL = "<script>alert(1)</script>"
MONTH = date(2026, 10, 1)


def _inputs():
    clusters = pl.DataFrame({"cluster": ["c1"], "month": [MONTH], "capacity_gpu_hours": [100.0],
                             "allocated_gpu_hours": [10.0], "active_gpu_hours": [5.0], "idle_gpu_hours": [5.0],
                             "job_count": [1], "sample_coverage": [1.0], "jobs_without_samples": [0],
                             "queue_seconds_p50": [0.0], "queue_seconds_p95": [0.0]})
    departments = pl.DataFrame({"cluster": ["c1"], "month": [MONTH], "division": ["d"],
                                "department": [EVIL], "job_count": [1], "user_count": [1], "gpu_hours": [10.0],
                                "measured_gpu_hours": [10.0], "active_gpu_hours": [5.0], "idle_gpu_hours": [5.0],
                                "zero_util_gpu_hours": [0.0], "utilization": [0.5], "energy_kwh": [1.0],
                                "queue_seconds_p50": [0.0], "queue_seconds_p95": [0.0], "share_of_capacity": [0.1]})
    jobs = pl.DataFrame({"cluster": ["c1"], "job_id": ["1"], "job_name": [EVIL], "user_name": ['a&b"c'],
                         "account": [EVIL], "department": [EVIL], "partition_name": [EVIL],
                         "state": ["COMPLETED"], "start_time": [datetime(2026, 10, 1)], "gpus": [1.0],
                         "gpu_model": ["H100"], "gpu_hours": [10.0], "active_gpu_hours": [5.0], "utilization": [0.5],
                         "utilization_signal": ["sm_active"], "idle_gpu_hours": [5.0], "queue_seconds": [0.0],
                         "n_samples": [10], "elapsed_seconds": [36_000]})
    flags = pl.DataFrame([{name: None for name in FLAG_SCHEMA} | {
        "cluster": "c1", "job_id": "1", "job_id_raw": "1", "job_name": EVIL, "user_name": 'a&b"c',
        "department": EVIL, "reason": "LOW_UTIL", "severity": "high", "detail": EVIL, "recommendation": EVIL,
        "wasted_gpu_hours": 5.0, "month": MONTH}], schema=FLAG_SCHEMA)  # fmt: skip
    return build_inputs(MONTH, "test", clusters=clusters, departments=departments, jobs=jobs, flags=flags)


def test_script_in_job_name_shows_as_text(tmp_path: Path) -> None:
    inputs = _inputs()
    review = write_review(render_review(inputs), tmp_path, "2026-10")
    write_department_pages(render_department_pages(inputs), tmp_path, "2026-10")
    department = tmp_path / "2026-10" / "departments" / department_file_name(EVIL)
    for page_file in (review, department):
        page = load_page(page_file, tmp_path / f"{page_file.stem}.png")
        assert page.dialogs == []
        assert page.console_errors == [] and page.page_errors == []
        assert EVIL in page.text
        assert 'a&b"c' in page.text
