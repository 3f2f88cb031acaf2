"""config: ``[delivery]``: recipients per audience, known departments, links need a base URL,
and a relay to send through."""

from __future__ import annotations

import tomllib

import pytest

from config import EXAMPLE_CONFIG, parse_config
from tests.unit.config_cases import SOURCE, drop, example, problems_of, put

GOOD = {
    "operations": ["gpu-ops@example.org"],
    "finance": ["finance@example.org"],
    "departments": {"vision": ["vision-lead@example.org", "vision-pi@example.org"]},
}


def _with(**changes) -> dict:
    return example(put("delivery", GOOD | changes))


def test_a_complete_section_validates_with_defaults() -> None:
    delivery = parse_config(_with(), source=SOURCE).delivery
    assert delivery is not None
    assert delivery.departments == {"vision": ["vision-lead@example.org", "vision-pi@example.org"]}
    assert (delivery.pages, delivery.finance_files, delivery.link_base_url) == ("attach", "attach", None)
    assert delivery.max_attachment_bytes == 20_000_000


def test_links_keep_the_base_url_without_its_trailing_slash() -> None:
    changes = {"finance_files": "link", "link_base_url": "https://reports.example.org/gpu/"}
    delivery = parse_config(_with(**changes), source=SOURCE).delivery
    assert delivery is not None and delivery.link_base_url == "https://reports.example.org/gpu"


BROKEN = [
    ("unknown-department", {"departments": {"visoin": ["a@example.org"]}}, [], "delivery.departments.visoin",
     "did you mean 'vision'"),
    ("unmapped-is-no-department", {"departments": {"unmapped": ["a@example.org"]}}, [],
     "delivery.departments.unmapped", "unknown department"),
    ("department-without-managers", {"departments": {"vision": []}}, [], "delivery.departments.vision",
     "no addresses"),
    ("bad-address", {"operations": ["ops"]}, [], "delivery.operations[0]", "not an e-mail address"),
    ("link-without-url", {"finance_files": "link"}, [], "delivery.link_base_url", 'finance_files = "link"'),
    ("pages-link-without-url", {"pages": "link"}, [], "delivery.link_base_url", 'pages = "link"'),
    ("url-not-http", {"pages": "link", "link_base_url": "reports.example.org"}, [], "delivery.link_base_url", ""),
    ("bad-mode", {"pages": "inline"}, [], "delivery.pages", "'attach' or 'link'"),
    ("no-recipients", {"operations": [], "finance": [], "departments": {}}, [], "delivery.operations",
     "needs recipients"),
    ("limit", {"max_attachment_mb": 0}, [], "delivery.max_attachment_mb", "greater than 0"),
    ("unknown-key", {"recipients": ["a@example.org"]}, [], "delivery.recipients", "unknown key"),
    ("operations-twice", {"operations": ["a@example.org", "b@example.org", "A@Example.org"]}, [],
     "delivery.operations[2]", "'A@Example.org' is listed twice in [delivery] operations"),
    ("finance-twice", {"finance": ["f@example.org", "f@example.org"]}, [], "delivery.finance[1]",
     "'f@example.org' is listed twice in [delivery] finance"),
    ("managers-twice", {"departments": {"vision": ["v@example.org", "V@example.org"]}}, [],
     "delivery.departments.vision[1]", "'V@example.org' is listed twice in [delivery] departments.vision"),
    ("no-relay", {}, [drop("smtp"), drop("alerts")], "smtp", "[delivery] sends through [smtp]"),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "more", "key", "fragment"), [c[1:] for c in BROKEN], ids=[c[0] for c in BROKEN])
def test_a_broken_section_names_the_key(changes: dict, more: list, key: str, fragment: str) -> None:
    data = _with(**changes)
    for change in more:
        change(data)
    problems = problems_of(data)
    assert [p.key for p in problems] == [key]
    assert fragment in problems[0].reason


def test_the_commented_example_section_validates() -> None:
    text = EXAMPLE_CONFIG.read_text(encoding="utf-8")
    block = text.split("\n# [delivery]\n", 1)[1].split("\n\n", 1)[0]
    section = "[delivery]\n" + "\n".join(line.removeprefix("# ") for line in block.splitlines())
    delivery = parse_config(tomllib.loads(text + "\n" + section + "\n"), source=SOURCE).delivery
    assert delivery is not None and delivery.departments["nlp"] == ["nlp-lead@example.org", "nlp-pi@example.org"]
    assert delivery.link_base_url == "https://gpu-reports.example.org/reports"
