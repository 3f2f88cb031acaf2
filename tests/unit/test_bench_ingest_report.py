"""The decoder line of ``cardhours bench ingest``'s report: which decoder ran, and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardhours.bench import ingest_report
from cardhours.bench.ingest import BenchResult
from cardhours.bench.ingest_report import decoder_note


def result(decoder: str, asked: str = "auto", fallbacks: int = 0) -> BenchResult:
    timings = {"ours": {"decoder": decoder, "fallbacks": fallbacks}, "raw": {}, "client": {}}
    return BenchResult(256, 24, 15, 3, Path("/tmp/bench"), True, 100, timings, decoder_asked=asked)


def test_the_numba_decoder_is_named_with_its_fallbacks() -> None:
    assert decoder_note(result("numba", fallbacks=2)) == (
        "decoder: numba (cardhours[fast], compiled; metrics it handed to pyarrow in the fastest read: 2)"
    )


def test_pyarrow_says_whether_it_was_asked_for_or_numba_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert decoder_note(result("pyarrow", "pyarrow")) == "decoder: pyarrow (asked for with --decoder pyarrow)"
    monkeypatch.setattr(ingest_report, "numba_missing", lambda: "No module named 'numba'")
    assert decoder_note(result("pyarrow")) == (
        "decoder: pyarrow, the default install (numba cannot be imported: "
        "No module named 'numba'; pip install 'cardhours[fast]')"
    )
