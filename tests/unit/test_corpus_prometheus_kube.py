"""The Prometheus and kube-state-metrics cases of the bad-input corpus (tests/corpus), one test per case."""

from __future__ import annotations

import pytest

from tests.corpus import Case, kube, prometheus

CASES = [*prometheus.CASES, *kube.CASES]
KNOWN_BUGS = [*kube.KNOWN_BUGS]


def test_ids_are_unique_and_name_their_source() -> None:
    ids = [case.id for case in CASES + KNOWN_BUGS]
    assert len(ids) == len(set(ids))
    assert all(case.id.startswith({"prometheus": "prom-", "kube": "kube-"}[case.source]) for case in CASES + KNOWN_BUGS)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_case(case: Case) -> None:
    case.check()


@pytest.mark.parametrize("case", KNOWN_BUGS, ids=lambda case: case.id)
@pytest.mark.xfail(strict=True, reason="a known defect: the case states the correct outcome")
def test_known_bug(case: Case) -> None:
    case.check()
