"""Every case of the bad-input corpus (tests/corpus) gives its promised outcome, and
docs/bad-input.md is rendered from exactly these cases."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.corpus import Case
from tests.corpus.catalog import CASES, DOCS, page

PREFIX = {"sacct": "sacct", "prometheus": "prom", "kube": "kube", "config": "config"}


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_case_outcome(case: Case) -> None:
    case.check()


def test_case_ids_are_unique_and_named_by_source() -> None:
    assert [name for name, n in Counter(case.id for case in CASES).items() if n > 1] == []
    assert [case.id for case in CASES if not case.id.startswith(PREFIX[case.source] + "-")] == []


def test_the_corpus_is_broad() -> None:
    assert len(CASES) >= 40
    assert {case.source for case in CASES} == {"sacct", "prometheus", "kube", "config"}


def test_docs_page_is_rendered_from_the_cases() -> None:
    assert DOCS.read_text() == page(), "docs/bad-input.md is out of step: run python -m tests.corpus.catalog"


def test_slurm_docs_list_every_policy_code_once() -> None:
    from transforms.helpers.slurm_policy import POLICIES

    text = (DOCS.parent / "slurm.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert rows == [f"| `{code}` | {p.record} | {p.action} | {p.detail} |" for code, p in POLICIES.items()]
