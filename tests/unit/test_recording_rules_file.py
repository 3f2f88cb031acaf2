"""deploy/prometheus/cardhours-rules.yml says what the contracts say: the best signal's order and
metric names (contracts/signals.py, contracts/exporters/dcgm.py), and docs/recording-rules.md
describes every series it records."""

from __future__ import annotations

import re
from pathlib import Path

from contracts.exporters import DCGM
from contracts.signals import BEST_SIGNAL_ORDER, signal
from tests.support.recording_rules import recording_rules, rule_passes

DOC = Path(__file__).resolve().parents[2] / "docs" / "recording-rules.md"


def _best_rule() -> dict:
    (rule,) = [r for r in recording_rules() if r["record"] == "cardhours:gpu_activity:ratio"]
    return rule


def test_the_best_signal_takes_the_contracts_order_and_the_exporters_metrics() -> None:
    metric_of = {sig: metric for metric, sig in DCGM.metric_signals.items()}
    terms = [term.strip() for term in _best_rule()["expr"].split(" or ")]
    expected = []
    for name in BEST_SIGNAL_ORDER:
        # A percentage becomes a ratio, the unit of every other activity signal.
        expected.append(f"{metric_of[name]} / 100" if signal(name).unit == "%" else metric_of[name])
        assert signal(name).unit in {"%", "ratio"}
    assert terms == expected


def test_every_recorded_series_is_named_in_prometheus_style_and_documented() -> None:
    doc = DOC.read_text()
    for rule in recording_rules():
        assert re.fullmatch(r"cardhours:[a-z_]+:[a-z_]+", rule["record"]), rule["record"]
        assert f"`{rule['record']}`" in doc, f"docs/recording-rules.md does not describe {rule['record']}"


def test_the_workload_rules_are_back_filled_after_the_gpu_rule() -> None:
    passes = rule_passes(recording_rules())
    assert [[r["record"] for r in p] for p in passes][0] == ["cardhours:gpu_activity:ratio"]
    assert len(passes) == 2 and len(passes[1]) == len(recording_rules()) - 1
