"""Choosing the decoder (``decoders``): numba with ``cardhours[fast]``, pyarrow without it, the
same samples either way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sources.prometheus import decoders
from sources.prometheus.decoders import DecoderUnavailable, choose
from tests.corpus import prometheus as corpus
from tests.corpus.catalog import CASES
from tests.support.decoders import NEEDS_NUMBA

ROOT = Path(__file__).resolve().parents[2]
WITHOUT_NUMBA = """
import json, sys
sys.modules["numba"] = None  # as if cardhours[fast] were not installed: importing numba fails
from sources.prometheus.decoders import DecoderUnavailable, choose
from tests.corpus.prometheus import both, read
frame, report, _ = read(both())
try:
    choose("numba")
    refused = None
except DecoderUnavailable as exc:
    refused = str(exc)
print(json.dumps({"auto": choose("auto"), "read_with": report["decoder"], "refused": refused,
                  "rows": frame.sort("ts").to_dicts()}, default=str))
"""


def test_without_numba_the_default_install_reads_with_pyarrow() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_NUMBA],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["auto"] == result["read_with"] == "pyarrow"
    assert result["refused"].startswith("the numba decoder cannot be imported (")
    assert result["refused"].endswith("pip install 'cardhours[fast]', or use the default pyarrow decoder")
    frame, report, _ = corpus.read(corpus.both())  # this process: numba when installed
    assert result["rows"] == json.loads(json.dumps(frame.sort("ts").to_dicts(), default=str))
    assert len(result["rows"]) == corpus.N


@NEEDS_NUMBA
def test_with_numba_auto_takes_it() -> None:
    assert choose("auto") == choose("numba") == "numba" and choose("pyarrow") == "pyarrow"


def test_an_unknown_decoder_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown decoder 'fast': one of auto, numba, pyarrow"):
        choose("fast")


def test_asking_for_numba_where_it_cannot_be_imported_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decoders, "numba_missing", lambda: "No module named 'numba'")
    assert choose("auto") == "pyarrow"
    with pytest.raises(DecoderUnavailable, match=r"\(No module named 'numba'\): pip install 'cardhours\[fast\]'"):
        choose("numba")


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.source == "prometheus"], ids=[c.id for c in CASES if c.source == "prometheus"]
)
def test_the_prometheus_corpus_gives_the_same_outcomes_with_the_pyarrow_decoder(case, monkeypatch) -> None:
    monkeypatch.setattr(corpus, "DECODER", "pyarrow")
    case.check()
