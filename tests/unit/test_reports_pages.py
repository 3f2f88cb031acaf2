"""Department pages: one per department, escaped, linked from the review; safe file names;
writing a month replaces its pages and removes those of departments that vanished."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from markupsafe import escape as esc

from reports import render_department_pages, render_review, write_department_pages
from reports.department_page import department_names, render_department_page
from reports.paths import department_file_name, department_href
from tests.unit.reports_frames import (
    EVIL_ACCOUNT,
    EVIL_DEPT,
    EVIL_JOB,
    EVIL_USER,
    PLOTLY_SCRIPT,
    departments_frame,
    loads_shared_plotly,
    make_inputs,
    section,
    section_ids,
    table_row,
)


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return render_department_pages(make_inputs())


@pytest.mark.parametrize(
    ("department", "expected"),
    [("physics", "physics.html"), ("nlp-2_b", "nlp-2_b.html"), ("unmapped", "unmapped.html")],
)
def test_config_ids_keep_their_name(department: str, expected: str) -> None:
    assert department_file_name(department) == expected


@pytest.mark.parametrize("department", [EVIL_DEPT, "../../etc/passwd", "Physics", "a b", "", ".", "x" * 200, "ü"])
def test_other_names_become_safe_unique_file_names(department: str) -> None:
    name = department_file_name(department)
    assert re.fullmatch(r"[a-z0-9][a-z0-9_-]*\.html", name) and len(name) < 80
    assert "/" not in name and name != department_file_name(department + "x")
    assert department_file_name(department) == name  # stable across runs


def test_one_page_per_department_linked_from_the_review(pages: dict[str, str]) -> None:
    inputs = make_inputs()
    assert department_names(inputs) == sorted(["physics", "unmapped", EVIL_DEPT])
    assert sorted(pages) == sorted(department_file_name(d) for d in department_names(inputs))
    review = render_review(inputs)
    index = section(review, "department-index")
    for department in department_names(inputs):
        assert f'href="{department_href(department)}"' in index
        assert f'href="{department_href(department)}"' in section(review, "departments")


def test_department_page_content(pages: dict[str, str]) -> None:
    page = pages["physics.html"]
    assert PLOTLY_SCRIPT.search(page).group(1) == "../../" and page.startswith("<!DOCTYPE html>")
    assert '<a href="../review.html">' in page
    assert section_ids(page) == [
        "key-figures",
        "summary",
        "quota",
        "trend",
        "users",
        "flagged-jobs",
        "utilization",
        "top-idle-jobs",
        "how-to-read",
    ]
    summary = section(page, "summary")
    # alpha: jobs 1, 2, 5 (120 GPU-h on H100 at 2.0)
    assert table_row(summary, "alpha")[1:6] == ["2", "1", "300.0", "240.00", "50.0%"]
    assert table_row(section(page, "quota"), "1.0")[1:3] == ["0.4", "41.7%"]  # 310 GPU-h / 744 h
    trend = section(page, "trend")
    assert table_row(trend, "2025-02")[1] == "250.0" and table_row(trend, "2025-03")[1] == "310.0"
    assert ">ann<" in section(page, "users") and esc(EVIL_USER) not in page
    flagged = section(page, "flagged-jobs")
    assert "train-1" in flagged and "IDLE_TAIL" in flagged and "LOW_UTIL" not in flagged
    hrefs = re.findall(r'href="([^"]*)"', loads_shared_plotly(page))
    assert all(h.startswith("#") or h == "../review.html" for h in hrefs)


def test_department_page_escapes_every_data_string(pages: dict[str, str]) -> None:
    page = pages[department_file_name(EVIL_DEPT)]
    rest = loads_shared_plotly(page)
    for raw in (EVIL_JOB, EVIL_DEPT, EVIL_USER, EVIL_ACCOUNT, "<b>check</b>"):
        assert raw not in rest
    assert f"<title>GPU use of {esc(EVIL_DEPT)}, 2025-03</title>" in page
    for section_id, raw in (
        ("users", EVIL_USER),
        ("flagged-jobs", EVIL_JOB),
        ("top-idle-jobs", EVIL_ACCOUNT),
        ("top-idle-jobs", EVIL_JOB),
    ):
        assert esc(raw) in section(page, section_id), section_id


def test_department_without_jobs_or_quota_still_renders() -> None:
    inputs = make_inputs(jobs=None, flags=None, users=None)
    page = render_department_page(inputs, "physics")
    assert "No user rows." in page and "No flagged jobs." in page and "No jobs." in page
    assert loads_shared_plotly(page).rstrip().endswith("</html>")


def test_write_department_pages_replaces_the_set(tmp_path: Path) -> None:
    first = write_department_pages({"a.html": "<p>a</p>", "b.html": "<p>b</p>"}, tmp_path, "2025-03")
    folder = tmp_path / "2025-03" / "departments"
    assert first == [folder / "a.html", folder / "b.html"]
    (folder / "notes.txt").write_text("kept")
    write_department_pages({"a.html": "<p>a2</p>"}, tmp_path, "2025-03")
    assert sorted(p.name for p in folder.iterdir()) == ["a.html", "notes.txt"]
    assert (folder / "a.html").read_text() == "<p>a2</p>"
    write_department_pages({}, tmp_path, "2025-03")
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    for bad in ("../x.html", "A.html", "x.htm", ".hidden.html"):
        with pytest.raises(ValueError):
            write_department_pages({bad: ""}, tmp_path, "2025-03")
    with pytest.raises(ValueError):
        write_department_pages({}, tmp_path, "2025-3")


def test_a_vanished_department_loses_its_page(tmp_path: Path) -> None:
    write_department_pages(render_department_pages(make_inputs()), tmp_path, "2025-03")
    fewer = departments_frame().filter(pl.col("department") != "unmapped")
    write_department_pages(render_department_pages(make_inputs(departments=fewer)), tmp_path, "2025-03")
    names = sorted(p.name for p in (tmp_path / "2025-03" / "departments").iterdir())
    assert names == sorted(["physics.html", department_file_name(EVIL_DEPT)])
