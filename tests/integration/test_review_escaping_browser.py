"""User-supplied strings stay text in a real browser: no script runs, the name shows
literally, on the review page and on the department page, in the sections the asset adds
(chargeback, queues, data quality) and through a site's own header template."""

import re
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path

import polars as pl
import pytest
from markupsafe import escape

from reports import build_inputs, render_department_pages, render_review, write_department_pages, write_review
from reports.chargeback_section import chargeback_section
from reports.paths import department_file_name
from reports.sections.data_quality import data_quality_section
from reports.sections.kube_queues import kube_queues_section
from tests.support.browser import load_page
from transforms.marts.fct_job_flags import SCHEMA as FLAG_SCHEMA
from transforms.marts.mart_kube_queue_monthly import SCHEMA as QUEUE_SCHEMA
from warehouse.books.landings import GAP_SCHEMA

pytestmark = [pytest.mark.integration]

EVIL = "<script>alert(1)</script>"
MONTH = date(2026, 10, 1)


def _inputs():
    clusters = pl.DataFrame(
        {
            "cluster": ["c1"],
            "month": [MONTH],
            "capacity_gpu_hours": [100.0],
            "allocated_gpu_hours": [10.0],
            "active_gpu_hours": [5.0],
            "idle_gpu_hours": [5.0],
            "job_count": [1],
            "sample_coverage": [1.0],
            "jobs_without_samples": [0],
            "queue_seconds_p50": [0.0],
            "queue_seconds_p95": [0.0],
        }
    )
    departments = pl.DataFrame(
        {
            "cluster": ["c1"],
            "month": [MONTH],
            "division": ["d"],
            "department": [EVIL],
            "job_count": [1],
            "user_count": [1],
            "gpu_hours": [10.0],
            "measured_gpu_hours": [10.0],
            "active_gpu_hours": [5.0],
            "idle_gpu_hours": [5.0],
            "zero_util_gpu_hours": [0.0],
            "utilization": [0.5],
            "energy_kwh": [1.0],
            "queue_seconds_p50": [0.0],
            "queue_seconds_p95": [0.0],
            "share_of_capacity": [0.1],
        }
    )
    jobs = pl.DataFrame(
        {
            "cluster": ["c1"],
            "job_id": ["1"],
            "job_name": [EVIL],
            "user_name": ['a&b"c'],
            "account": [EVIL],
            "department": [EVIL],
            "partition_name": [EVIL],
            "state": ["COMPLETED"],
            "start_time": [datetime(2026, 10, 1)],
            "gpus": [1.0],
            "gpu_model": ["H100"],
            "gpu_hours": [10.0],
            "active_gpu_hours": [5.0],
            "utilization": [0.5],
            "utilization_signal": ["sm_active"],
            "idle_gpu_hours": [5.0],
            "queue_seconds": [0.0],
            "n_samples": [10],
            "elapsed_seconds": [36_000],
        }
    )
    flags = pl.DataFrame(
        [
            {name: None for name in FLAG_SCHEMA}
            | {
                "cluster": "c1",
                "job_id": "1",
                "job_id_raw": "1",
                "job_name": EVIL,
                "user_name": 'a&b"c',
                "department": EVIL,
                "reason": "LOW_UTIL",
                "severity": "high",
                "detail": EVIL,
                "recommendation": EVIL,
                "wasted_gpu_hours": 5.0,
                "month": MONTH,
            }
        ],
        schema=FLAG_SCHEMA,
    )
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


SITE_HEADER = (
    '{% extends "cardhours/header.html" %}{% block logo %}<p class="logo">ACME GPUs: {{ subtitle }}</p>{% endblock %}'
)


def _extra_sections() -> list:
    quarantine = pl.DataFrame(
        {"cluster": ["c1"], "source": ["sacct"], "reason": [EVIL], "rows": [2], "example": [EVIL]}
    )
    runaways = pl.DataFrame(
        {
            "cluster": ["c1"],
            "job_id": ["9"],
            "user_name": [EVIL],
            "state": ["FAILED"],
            "start_time": ["2026-10-01 00:00"],
            "end_time": ["2026-10-02 00:00"],
            "end_inferred_from": ["time_limit"],
            "gpus": [1.0],
        }
    )
    closed = pl.DataFrame(
        {
            "billing_month": [date(2026, 9, 1)],
            "closed_at": [datetime(2026, 10, 7, 9)],
            "accepted_gaps": [EVIL],
            "gaps": [EVIL],
            "head_hash": ["a" * 64],
        }
    )
    gap = {"cluster": EVIL, "source": "dcgm", "first_day": date(2026, 10, 1), "last_day": date(2026, 10, 2)}
    gaps = pl.DataFrame([gap | {"days": 2, "cause": EVIL}], schema=GAP_SCHEMA)
    queue_row = {c: None for c in QUEUE_SCHEMA} | {"cluster": "c1", "month": MONTH, "queue": EVIL}
    return [
        chargeback_section(pl.DataFrame(), pl.DataFrame(), "2026-10", "EUR", closed),
        kube_queues_section(pl.DataFrame([queue_row], schema=QUEUE_SCHEMA)),
        data_quality_section(quarantine, runaways, gaps),
    ]


def test_site_template_and_extra_sections_keep_strings_as_text(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "header.html").write_text(SITE_HEADER, encoding="utf-8")
    inputs = replace(_inputs(), generated_from=EVIL)
    inputs = replace(inputs, settings=replace(inputs.settings, templates_dir=site))
    review = write_review(render_review(inputs, extra_sections=_extra_sections()), tmp_path / "out", "2026-10")
    page = load_page(review, tmp_path / "review.png")
    assert page.dialogs == [] and page.console_errors == [] and page.page_errors == []
    assert f"ACME GPUs: October 2026, times in UTC. Generated from {EVIL}." in page.text
    assert f"2026-09 was closed with accepted gaps: {EVIL} (gaps: {EVIL})." in page.text
    # every escaped copy in the markup shows as text (header 2, extra sections 8 with the coverage gap's
    # cluster and cause, the blocks' tables and the department index 11), and plotly draws one more: the
    # department chart's tick label
    html = review.read_text(encoding="utf-8")
    markup = re.sub(r"<script.*?</script>", "", html.split("<body>")[1], flags=re.S)
    assert markup.count(escape(EVIL)) == 21
    assert page.text.count(EVIL) == 21 + 1
