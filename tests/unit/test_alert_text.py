"""The wording of alerts: what a person triages from the subject, and what to do."""

from __future__ import annotations

from datetime import datetime

from reports.alert_text import FailedStep, first_line, run_failure, stale_landings
from warehouse.books.landings import Stale


def test_the_subject_names_job_partition_step_and_error() -> None:
    steps = [FailedStep("raw__dcgm_samples", "MetricsSourceError: cannot read x.parquet"), FailedStep("b", "E: y")]
    alert = run_failure("daily_ingest", "abc123", "2026-10-02", steps, "Steps failed", "http://ui/runs/abc123")
    assert (
        alert.subject
        == "[cardhours] FAILED daily_ingest 2026-10-02: raw__dcgm_samples: MetricsSourceError: cannot read x.parquet"
    )
    assert "  raw__dcgm_samples: MetricsSourceError: cannot read x.parquet\n  b: E: y\n" in alert.body
    assert "Open the run for the full logs: http://ui/runs/abc123." in alert.body


def test_a_run_that_failed_outside_its_steps_says_so() -> None:
    alert = run_failure("monthly_review", "r1", None, [], "the run worker was killed", None)
    assert alert.subject == "[cardhours] FAILED monthly_review: the run worker was killed"
    assert "Partition: (none)" in alert.body and "outside its steps: the run worker was killed" in alert.body
    assert "(run id r1)" in alert.body


def test_first_line_skips_blank_lines_and_trims() -> None:
    assert first_line("\n\n  ValueError: bad\nTraceback ...") == "ValueError: bad"
    assert first_line("") == "(no error text)"
    assert len(first_line("x" * 1000)) == 1000
    assert first_line("x" * 1001) == "x" * 997 + "..."
    long = run_failure("j", "r", "p", [FailedStep("s", "y" * 300)], "", None)
    assert len(long.subject) == 250


def test_stale_sources_are_listed_with_their_last_landing() -> None:
    stale = [Stale("gpu-a", "dcgm", datetime(2026, 10, 2, 3, 0)), Stale("gpu-b", "sacct", None)]
    alert = stale_landings(stale, 36, datetime(2026, 10, 4, 9, 30))
    assert alert.subject == "[cardhours] no successful daily ingest for 36 h: gpu-a, gpu-b"
    assert (
        "  cluster 'gpu-a', dcgm: last landed 2026-10-02 03:00 UTC\n  cluster 'gpu-b', sacct: never landed"
        in alert.body
    )
    assert alert.text.startswith(alert.subject + "\n")
