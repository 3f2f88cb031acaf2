"""The review's "Data quality" section: quarantined rows and runaway jobs, every string escaped."""

from __future__ import annotations

import polars as pl

from reports.sections.data_quality import data_quality_section
from tests.unit.reports_frames import EVIL_JOB, EVIL_USER, table_row

QUARANTINE = pl.DataFrame(
    {
        "cluster": ["c1", "c2"],
        "source": ["sacct", "dcgm"],
        "reason": [EVIL_JOB, "NEGATIVE_VALUE"],
        "rows": [3, 12_345],
        "example": ["line 4: <b>bad</b>", "x: y"],
    }
)
RUNAWAYS = pl.DataFrame(
    {
        "cluster": ["c1", "c1"],
        "job_id": ["7", "8"],
        "user_name": [EVIL_USER, "ann"],
        "state": ["FAILED", "CANCELLED"],
        "start_time": ["2026-10-01 00:00", "2026-10-03 00:00"],
        "end_time": ["2026-10-02 00:00", "2026-11-01 00:00"],
        "end_inferred_from": ["time_limit", "month_end"],
        "gpus": [0.4286, 8.0],
    }
)


def test_quarantine_and_runaways_are_listed_with_escaped_strings() -> None:
    html = data_quality_section(QUARANTINE, RUNAWAYS).render()
    assert html.startswith('<section id="data-quality" class="block"><h2>Data quality</h2><p>12,348 input rows')
    assert table_row(html, "c2") == ["c2", "dcgm", "NEGATIVE_VALUE", "12,345", "x: y"]
    assert table_row(html, "c1")[2:] == ["&lt;script&gt;alert(1)&lt;/script&gt;", "3", "line 4: &lt;b&gt;bad&lt;/b&gt;"]
    _, runaways = html.split("<p>2 runs ended in a final state with End 'Unknown' (slurmdbd runaway jobs).")
    assert "<script>" not in html and "<b>" not in html
    row = ["c1", "7", "a&amp;b&#34;c", "FAILED", "2026-10-01 00:00", "2026-10-02 00:00", "its time limit", "0.43"]
    assert table_row(runaways, "c1") == row
    assert "the end of the month it started in (no time limit, no labelled sample)</td>" in runaways


def test_a_clean_month_says_so() -> None:
    html = data_quality_section(QUARANTINE.clear(), RUNAWAYS.clear()).render_body()
    assert html == "<p>Nothing was quarantined this month.</p>"
