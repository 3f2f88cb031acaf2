"""The review's "Data quality" section: coverage gaps, quarantined rows and runaway jobs, every
string escaped."""

from __future__ import annotations

import re
from datetime import date, datetime

import polars as pl

from reports.sections.data_quality import data_quality_section
from tests.unit.reports_frames import EVIL_JOB, EVIL_USER, table_row
from transforms.intermediate.int_gpu_inventory_observed import difference_advice, inventory_differences
from warehouse.books.landings import GAP_SCHEMA

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

NO_GAPS = pl.DataFrame(schema=GAP_SCHEMA)
GAPS = pl.DataFrame(
    {
        "cluster": ["c1", "c1", EVIL_USER],
        "source": ["dcgm", "dcgm", "sacct"],
        "first_day": [date(2026, 10, 1), date(2026, 10, 25), date(2026, 10, 4)],
        "last_day": [date(2026, 10, 19), date(2026, 10, 25), date(2026, 10, 4)],
        "days": [19, 1, 1],
        "cause": ["before_first_sample", "no_series", EVIL_JOB],
    },
    schema=GAP_SCHEMA,
)


def test_quarantine_and_runaways_are_listed_with_escaped_strings() -> None:
    html = data_quality_section(QUARANTINE, RUNAWAYS, NO_GAPS).render()
    assert html.startswith('<section id="data-quality" class="block"><h2>Data quality</h2><p>12,348 input rows')
    assert table_row(html, "c2") == ["c2", "dcgm", "NEGATIVE_VALUE", "12,345", "x: y"]
    assert table_row(html, "c1")[2:] == ["&lt;script&gt;alert(1)&lt;/script&gt;", "3", "line 4: &lt;b&gt;bad&lt;/b&gt;"]
    _, runaways = html.split("<p>2 runs ended in a final state with End 'Unknown' (slurmdbd runaway jobs).")
    assert "<script>" not in html and "<b>" not in html
    row = ["c1", "7", "a&amp;b&#34;c", "FAILED", "2026-10-01 00:00", "2026-10-02 00:00", "its time limit", "0.43"]
    assert table_row(runaways, "c1") == row
    assert "the end of the month it started in (no time limit, no labelled sample)</td>" in runaways


def test_a_clean_month_says_so() -> None:
    html = data_quality_section(QUARANTINE.clear(), RUNAWAYS.clear(), NO_GAPS).render_body()
    assert html == "<p>Nothing was quarantined this month.</p>"


def test_inventory_differences_are_listed_with_what_to_change() -> None:
    declared = pl.DataFrame(
        {"cluster": ["c1"], "hostname": ["g01"], "gpu": [0], "gpu_model": ["A100"], "gpu_i_profile": [None]},
        schema_overrides={"gpu": pl.Int16, "gpu_i_profile": pl.String},
    )
    hours = [datetime(2026, 10, 1, h) for h in (0, 1, 5)]
    observed = pl.DataFrame(
        {"cluster": "c1", "hostname": "g01", "gpu": 0, "gpu_i_profile": ["3g.40gb", "3g.40gb", None], "hour": hours},
        schema_overrides={"gpu": pl.Int16},
    )
    differences = inventory_differences(declared, observed)
    mismatches = differences.with_columns(advice=pl.Series([difference_advice(r) for r in differences.to_dicts()]))
    html = data_quality_section(QUARANTINE.clear(), RUNAWAYS.clear(), GAPS.clear(), mismatches).render_body()
    assert "<p>1 GPUs were observed otherwise than [[clusters.inventory.node_groups]] declares them." in html
    row = table_row(html, "c1")
    assert row[:7] == ["c1", "g01", "0", "layout", "whole", "3g.40gb", "2"] and row[-2] == "dcgm"
    assert (
        row[-1] == "c1 g01 GPU 0 ran as MIG 3g.40gb but is declared as whole: set mig_layout = [&#39;3g.40gb&#39;] "
        "on its node group (or split the group)."
    )


def test_coverage_gaps_come_first_with_their_cause_in_words() -> None:
    html = data_quality_section(QUARANTINE.clear(), RUNAWAYS.clear(), GAPS).render_body()
    head, rest = html.split("</table>", 1)
    assert head.startswith("<p>Coverage gaps: on 21 days (counted per cluster and source) a source answered")
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", head, flags=re.S)]
    assert [row for row in rows if row] == [
        ["c1", "dcgm", "2026-10-01", "2026-10-19", "19", "no series, before the first ever landed"],
        ["c1", "dcgm", "2026-10-25", "2026-10-25", "1", "no series"],
        ["a&amp;b&#34;c", "sacct", "2026-10-04", "2026-10-04", "1", "&lt;script&gt;alert(1)&lt;/script&gt;"],
    ]
    assert "<script>" not in html
    assert rest.strip().endswith("</div><p>Nothing was quarantined this month.</p>")
