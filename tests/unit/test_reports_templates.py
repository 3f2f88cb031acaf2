"""The page templates: a site's templates win over the packaged ones, stay autoescaped, fail
with a message naming the template, and every packaged template ships in the wheel."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from reports import render_department_pages, render_review
from reports.templating import ReportTemplateError
from tests.unit.reports_frames import EVIL_JOB, SETTINGS, loads_shared_plotly, make_inputs, section, section_ids

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "reports" / "templates"
LOGO = '{% extends "cardhours/header.html" %}{% block logo %}<p class="logo">ACME Research Computing</p>{% endblock %}'


def site(tmp_path: Path, **templates: str) -> Path:
    """A templates_dir holding ``templates`` (name with "/" for "__", e.g. sections__x_html)."""
    for name, text in templates.items():
        path = tmp_path / name.replace("__", "/").replace("_html", ".html")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def table_html(html: str) -> str:
    return re.search(r'<div class="table-wrap">.*?</div>', html, flags=re.S).group(0)


def with_site(templates_dir: Path, **frames):
    return make_inputs(settings=replace(SETTINGS, templates_dir=templates_dir), **frames)


def test_a_site_header_shows_on_every_page_and_the_rest_stays(tmp_path: Path) -> None:
    inputs = with_site(site(tmp_path, header_html=LOGO))
    review = render_review(inputs)
    header = '<header>\n<p class="logo">ACME Research Computing</p><h1>GPU monthly review 2025-03: alpha, b&amp;&lt;i'
    assert header in review
    logo = '<p class="logo">ACME Research Computing</p>'
    assert loads_shared_plotly(review).replace(logo, "") == loads_shared_plotly(render_review(make_inputs()))
    for name, page in render_department_pages(inputs).items():
        assert '<header>\n<p class="logo">ACME Research Computing</p><h1>GPU use of ' in page, name
        assert '<li><a href="../review.html">← monthly review</a></li>' in page


def test_a_site_section_template_changes_the_wording_not_the_numbers(tmp_path: Path) -> None:
    wording = '{% import "macros.html" as m %}<p class="caption">Our costs.</p>{{ m.table(table) }}'
    review = render_review(with_site(site(tmp_path, sections__headline_html=wording)))
    headline = section(review, "headline")
    packaged = section(render_review(make_inputs()), "headline")
    assert '<p class="caption">Our costs.</p>' in headline and "list price" not in headline and "list price" in packaged
    assert table_html(headline) == table_html(packaged)  # the same table, the same numbers
    assert '<td class="text">capacity (GPU-hours)</td><td class="num">1,000.0</td>' in table_html(headline)


def test_site_templates_are_autoescaped_too(tmp_path: Path) -> None:
    shout = '{% extends "cardhours/header.html" %}{% block logo %}<p class="logo">{{ subtitle }}</p>{% endblock %}'
    inputs = replace(with_site(site(tmp_path, header_html=shout)), generated_from=EVIL_JOB)
    page = loads_shared_plotly(render_review(inputs))
    assert EVIL_JOB not in page
    assert '<p class="logo">March 2025, times in UTC. Generated from &lt;script&gt;alert(1)&lt;/script&gt;.</p>' in page


def test_a_broken_site_template_names_the_file_line_and_directory(tmp_path: Path) -> None:
    inputs = with_site(site(tmp_path, footer_html="<footer>\n{% if %}</footer>"))
    with pytest.raises(ReportTemplateError) as info:
        render_review(inputs)
    message = str(info.value)
    assert message.startswith("report template footer.html, line 2 failed: ")
    assert f"check the templates in {tmp_path} ([reports] templates_dir" in message


def test_a_site_template_using_an_unknown_value_fails_instead_of_rendering_blank(tmp_path: Path) -> None:
    inputs = with_site(site(tmp_path, sections__coverage_html="{{ tabel }}"))
    expected = r"report template sections/coverage\.html failed: 'tabel' is undefined"
    with pytest.raises(ReportTemplateError, match=expected):
        render_review(inputs)


def test_without_a_site_directory_the_packaged_templates_render() -> None:
    ids = section_ids(render_review(make_inputs()))
    assert ids[:2] == ["key-figures", "headline"] and ids[-1] == "how-to-read"


def test_every_packaged_template_ships_as_package_data() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["reports"]
    files = [p.relative_to(ROOT / "reports").as_posix() for p in TEMPLATES.rglob("*") if p.is_file()]
    assert len(files) >= 30
    unshipped = [f for f in files if not any(fnmatch.fnmatch(f, g) and f.count("/") == g.count("/") for g in globs)]
    assert unshipped == []


def test_the_documented_example_renders(tmp_path: Path) -> None:
    docs = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")
    header = re.search(r"`report-templates/header\.html`:\n\n```jinja\n(.*?)```", docs, flags=re.S).group(1)
    page = render_review(with_site(site(tmp_path, header_html=header)))
    assert '<p class="logo"><strong>ACME Research Computing</strong> GPU service</p><h1>' in page


def test_every_section_template_lists_its_values() -> None:
    bodies = sorted([*TEMPLATES.glob("sections/*.html"), *TEMPLATES.glob("department/*.html")])
    assert len(bodies) == 28
    assert [p.name for p in bodies if not p.read_text(encoding="utf-8").startswith("{#- Values: ")] == []
