"""The delivered mail's plain-text bodies: the month's figures from the review's frames, the
top flagged jobs with their reasons in words, a department's own numbers, and data strings
kept to one printable line."""

from __future__ import annotations

import polars as pl

from reports.delivery_text import department_body, finance_body, one_line, review_body
from tests.unit.reports_frames import EVIL_DEPT, EVIL_JOB, flags_frame, make_inputs

WHERE = "The page is attached."


def _block(body: str, first: str) -> list[str]:
    lines = body.splitlines()
    start = lines.index(first)
    return lines[start : lines.index("", start)]


def test_review_body_has_capacity_use_utilization_and_idle_cost_per_cluster() -> None:
    body = review_body(make_inputs(), WHERE)
    assert body.startswith("GPU review for 2025-03\n")
    assert _block(body, "Cluster alpha") == [
        "Cluster alpha",
        "  Capacity:     1,000.0 GPU-hours",
        "  Used:         625.0 GPU-hours (62.5% of capacity allocated to jobs)",
        "  Utilization:  40.0% of the allocated GPU-hours were active",
        "  Idle cost:    1,375.00 EUR in all",
        "                675.00 EUR for 375.0 GPU-hours allocated to jobs but idle",
        "                700.00 EUR for 375.0 GPU-hours no job allocated",
        "  Jobs:         5",
    ]
    assert body.rstrip().endswith(WHERE)


def test_an_unpriced_cluster_says_so_instead_of_a_partial_total() -> None:
    body = review_body(make_inputs(), WHERE)
    assert "  Idle cost:    n/a (a GPU model has no price) in all" in _block(body, "Cluster b&<i>2</i>")


def test_top_flagged_jobs_most_waste_first_with_reasons_in_words() -> None:
    body = review_body(make_inputs(), WHERE)
    flagged = _block(body, "Flagged job runs: 2. The 2 that wasted most GPU-hours:")
    assert flagged[1].startswith("1. Job 3 on alpha (") and flagged[5].startswith("2. Job 1 on alpha (train-1)")
    assert flagged[2] == "   90.0 GPU-hours wasted of 100.0, idle cost 90.00 EUR"
    assert flagged[3].startswith("   Why: the GPUs were busy only a small share of the time; ")
    assert flagged[3].endswith("(LOW_UTIL, INPUT_BOUND)")


def test_a_department_mail_holds_only_that_department() -> None:
    body = department_body(make_inputs(), "physics", WHERE)
    assert body.startswith("GPU use of physics in 2025-03\n")
    assert "300.0 GPU-hours by 2 jobs of 1 user (30.0% of the cluster's capacity)" in body
    assert "Flagged job runs: 1. The one that wasted most GPU-hours:" in body and "Job 1 on alpha (train-1)" in body
    assert "Job 3" not in body and EVIL_JOB not in body


def test_a_department_without_jobs_says_so() -> None:
    body = department_body(make_inputs(), "chem", "It has no page.")
    assert "The department ran no jobs this month." in body and "No job was flagged this month." in body


def test_strings_from_the_data_stay_on_their_line() -> None:
    hostile = "x\r\nBcc: victim@example.org\n\n<html>" + "y" * 200
    flags = flags_frame().with_columns(pl.lit(hostile).alias("job_name"), pl.lit(EVIL_DEPT).alias("department"))
    body = review_body(make_inputs(flags=flags), WHERE)
    assert not any(line.startswith("Bcc:") for line in body.splitlines())
    job_line = next(line for line in body.splitlines() if line.startswith("1. Job"))
    assert "x Bcc: victim@example.org <html>yyy" in job_line and "…" in job_line
    assert one_line("a\u2028b\x00c\td") == "a b c d"


def test_finance_body_lists_the_files() -> None:
    body = finance_body("2025-03", ["chargeback_focus.csv", "flagged_jobs.csv"], "The files are attached.")
    assert "  - chargeback_focus.csv\n  - flagged_jobs.csv\n" in body
    assert "(no files" not in body
