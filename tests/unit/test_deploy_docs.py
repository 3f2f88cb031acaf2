"""docs/deploy.md and docs/scaling.md show the files under deploy/ as they are: each quoted file
matches its source."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEPLOY, SCALING = REPO / "docs" / "deploy.md", REPO / "docs" / "scaling.md"
RULES = REPO / "docs" / "recording-rules.md"
SHOWN = {  # each file under deploy/ and the page that quotes it
    "dagster.yaml": DEPLOY,
    "workspace.yaml": DEPLOY,
    "cardhours.env.example": DEPLOY,
    "cardhours-dagster-daemon.service": DEPLOY,
    "cardhours-dagster-webserver.service": DEPLOY,
    "cardhours-celery-worker@.service": SCALING,
    "prometheus/cardhours-rules.yml": RULES,
}


def _quoted(name: str) -> str:
    """The fenced block that follows the first line naming ``deploy/<name>`` and ending in a colon."""
    doc = SHOWN[name]
    pattern = rf"^`deploy/{re.escape(name)}`[^\n]*:\n\n```\w*\n(.*?)```$"
    found = re.search(pattern, doc.read_text(), flags=re.MULTILINE | re.DOTALL)
    assert found, f"docs/{doc.name} does not quote deploy/{name}"
    return found.group(1)


@pytest.mark.parametrize("name", SHOWN)
def test_the_doc_quotes_the_file_as_it_is(name: str) -> None:
    assert _quoted(name) == (REPO / "deploy" / name).read_text()


def test_every_file_under_deploy_is_shown() -> None:
    files = [path.relative_to(REPO / "deploy").as_posix() for path in (REPO / "deploy").rglob("*") if path.is_file()]
    assert sorted(files) == sorted(SHOWN)
