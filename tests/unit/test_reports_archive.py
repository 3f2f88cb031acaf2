"""The reports folder as an archive: the shared plotly.js (written once, atomically, only when
missing or different; found by every page's relative path) and index.html (read from a folder
of files: months newest first, review, department pages, exports, sizes, escaping)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from markupsafe import escape as esc
from plotly.offline import get_plotlyjs, get_plotlyjs_version

from reports import atomic as atomic_module
from reports import render_department_pages, render_review, write_department_pages, write_review
from reports.archive_index import SEALED_NOTE, fmt_size, render_index, scan_archive, write_index
from reports.manifest import write_manifest
from reports.plotly_asset import plotly_js_href, plotly_js_name, standalone, write_plotly_js
from tests.unit.reports_frames import EVIL_DEPT, PLOTLY_SCRIPT, make_inputs


def test_plotly_js_is_the_installed_bundle_named_by_its_version(tmp_path: Path) -> None:
    path = write_plotly_js(tmp_path)
    assert path == tmp_path / "assets" / f"plotly-{get_plotlyjs_version()}.min.js" and path.name == plotly_js_name()
    assert path.read_text(encoding="utf-8") == get_plotlyjs()
    assert plotly_js_href(1) == f"../assets/{path.name}" and plotly_js_href(2) == f"../../assets/{path.name}"
    with pytest.raises(ValueError):
        plotly_js_href(-1)


def test_plotly_js_is_written_only_when_missing_or_different(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_plotly_js(tmp_path)
    replaced = []
    real_replace = os.replace
    monkeypatch.setattr(atomic_module.os, "replace", lambda src, dst: (replaced.append(dst), real_replace(src, dst)))
    write_plotly_js(tmp_path)
    assert replaced == []  # the same bundle: left alone
    path.write_text(get_plotlyjs()[:-1] + "X", encoding="utf-8")  # same size, other bytes
    write_plotly_js(tmp_path)
    assert replaced == [path] and path.read_text(encoding="utf-8") == get_plotlyjs()
    assert sorted(os.listdir(path.parent)) == [path.name]  # no temporary file left


def test_every_written_page_finds_the_shared_plotly_js_by_its_relative_path(tmp_path: Path) -> None:
    inputs = make_inputs()
    review = write_review(render_review(inputs), tmp_path, "2025-03")
    pages = write_department_pages(render_department_pages(inputs), tmp_path, "2025-03")
    assert len(pages) >= 2
    for page in [review, *pages]:
        html = page.read_text(encoding="utf-8")
        src = re.search(r'<script src="([^"]+)"', html).group(1)
        assert PLOTLY_SCRIPT.search(html) and (page.parent / src).resolve() == (tmp_path / "assets" / plotly_js_name())
        assert get_plotlyjs()[:200] not in html
    assert sorted(os.listdir(tmp_path / "assets")) == [plotly_js_name()]


def _folder(root: Path) -> None:
    """Two months of files as the assets leave them, plus things the index must skip."""
    october, september = root / "2026-10", root / "2026-09"
    (october / "departments").mkdir(parents=True)
    (september / "departments").mkdir(parents=True)
    (october / "review.html").write_text("r" * 2500)
    (october / "departments" / "vision.html").write_text("v" * 10)
    (october / "departments" / "nlp.html").write_text("n" * 20)
    (october / "flagged_jobs.csv").write_text("f" * 999)
    (october / "chargeback_focus.csv").write_text("c" * 1_234_567)
    (october / "chargeback_jobs.csv").write_text("j")
    (october / f"{EVIL_DEPT}.txt").write_text("evil")  # a file someone put there: listed, escaped
    (october / ".chargeback_jobs.csv.abc.tmp").write_text("half")  # an atomic write in progress
    (september / "review.html").write_text("old")
    (september / "departments" / "vision.html").write_text("old")
    (september / "chargeback_focus.parquet").write_bytes(b"PAR1")
    write_manifest(september, [september / "chargeback_focus.parquet"])
    (root / "2026-13").mkdir()  # not a month
    (root / "notes").mkdir()
    (root / "2026-08").mkdir()  # a month with nothing but an export
    (root / "2026-08" / "chargeback_focus.csv").write_text("x")
    write_plotly_js(root)


def test_index_lists_every_month_newest_first_from_the_files(tmp_path: Path) -> None:
    _folder(tmp_path)
    months = scan_archive(tmp_path)
    assert [m.month for m in months] == ["2026-10", "2026-09", "2026-08"]
    october, september, august = months
    assert (october.review.href, october.review.bytes) == ("2026-10/review.html", 2500)
    assert [(f.text, f.href, f.bytes) for f in october.departments] == [
        ("nlp", "2026-10/departments/nlp.html", 20),
        ("vision", "2026-10/departments/vision.html", 10),
    ]
    exports = {f.text: (f.href, f.bytes, f.size) for f in october.exports}
    assert set(exports) == {"chargeback_focus.csv", "chargeback_jobs.csv", "flagged_jobs.csv", f"{EVIL_DEPT}.txt"}
    assert exports["chargeback_focus.csv"] == ("2026-10/chargeback_focus.csv", 1_234_567, "1.2 MB")
    assert exports["flagged_jobs.csv"][2] == "999 B"
    assert exports[f"{EVIL_DEPT}.txt"][0] == "2026-10/%3Cimg%20src%3Dx%20onerror%3Dalert%282%29%3E.txt"
    assert {f.text: f.note for f in september.exports} == {
        "MANIFEST.sha256": "",
        "chargeback_focus.parquet": SEALED_NOTE,
    }
    assert august.review is None and august.departments == ()


def test_index_page_links_sizes_and_escapes(tmp_path: Path) -> None:
    _folder(tmp_path)
    path = write_index(tmp_path)
    assert path == tmp_path / "index.html"
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    assert EVIL_DEPT not in html and f">{esc(EVIL_DEPT)}.txt</a>" in html
    sections = re.findall(r'<section id="month-([0-9-]+)"', html)
    assert sections == ["2026-10", "2026-09", "2026-08"]
    hrefs = re.findall(r'href="([^"#]+)"', html)
    for href in hrefs:
        assert (tmp_path / unquote(href)).is_file(), href
    assert len(hrefs) == 7 + 4 + 1
    assert '<td class="num" title="1234567 bytes">1.2 MB</td>' in html
    assert "No review in this month's folder." in html  # 2026-08
    assert "3 months, newest first." in html


def test_index_of_an_empty_or_missing_folder(tmp_path: Path) -> None:
    assert scan_archive(tmp_path / "missing") == []
    assert "No months yet" in render_index([])
    write_index(tmp_path)
    assert "No months yet" in (tmp_path / "index.html").read_text(encoding="utf-8")


def test_index_follows_a_site_template(tmp_path: Path) -> None:
    _folder(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "header.html").write_text(
        '{% extends "cardhours/header.html" %}{% block logo %}<p class="logo">ACME {{ title }}</p>{% endblock %}'
    )
    html = write_index(tmp_path, site).read_text(encoding="utf-8")
    assert '<p class="logo">ACME GPU reports</p>' in html


def test_fmt_size() -> None:
    assert [fmt_size(n) for n in (0, 999, 1000, 4_712_345, 2_500_000_000)] == [
        "0 B",
        "999 B",
        "1.0 kB",
        "4.7 MB",
        "2.5 GB",
    ]


def test_a_page_made_standalone_carries_plotly_js_inline() -> None:
    page = render_department_pages(make_inputs())["physics.html"]
    alone = standalone(page)
    assert get_plotlyjs() in alone and not PLOTLY_SCRIPT.search(alone)
    assert alone.replace(f"<script>{get_plotlyjs()}</script>", "") == PLOTLY_SCRIPT.sub("", page)
    with pytest.raises(ValueError, match="nothing to inline"):
        standalone("<html></html>")
