"""The review's flags against the simulator's truth on a small simulated month (32 Slurm GPUs
with a MIG node, 31 days at 600 s: about 2,900 runs, 2-3 minutes): each reason's precision and
recall, and healthy runs rarely flagged (benchmarks/flag_quality.py; the demo month's figures
are in docs/marts.md).

The bounds are below what the rules reach on the demo month (every workload reason 100 %
precise, recall 98-100 %, no healthy run flagged for its workload): a threshold or rule change
that flags healthy work, or misses the kind built for a reason, fails here."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest
from dagster import DagsterInstance

from benchmarks.flag_quality import runs_with_truth, score
from pipelines.assets.gate import GATE_STEP
from pipelines.definitions import build_definitions
from simulate.expected_flags import POLICY_REASONS
from simulate.run import simulate

pytestmark = [pytest.mark.integration, pytest.mark.slow]

T0, DAYS, GPUS, SEED, STEP = date(2026, 10, 1), 31, 32, 5, 600
MIN_PRECISION = 0.95  # of every workload reason that flagged a run
MIN_RECALL = 0.90  # of every workload reason with at least MIN_JUDGEABLE runs of its kinds
MIN_JUDGEABLE = 5
MAX_FALSE_ALARMS = 0.02  # healthy runs flagged for their workload
MAX_FALSE_ALARMS_ANY = 0.05  # ... for any reason (the debug partition's policy, placement)


@pytest.fixture(scope="module")
def quality(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("flag_quality")
    sim = simulate(out, gpus=GPUS, days=DAYS, start=T0, seed=SEED, step_seconds=STEP, metrics_format="parquet")
    definitions = build_definitions(str(sim.config_path))
    with DagsterInstance.ephemeral() as instance:
        daily = definitions.resolve_job_def("daily_ingest")
        for i in range(DAYS):
            day = (T0 + timedelta(days=i)).isoformat()
            assert daily.execute_in_process(partition_key=day, instance=instance).success
        gate = {"ops": {GATE_STEP: {"config": {"accept_gaps": "the simulated month"}}}}
        monthly = definitions.resolve_job_def("monthly_review")
        assert monthly.execute_in_process(partition_key=T0.isoformat(), instance=instance, run_config=gate).success
    runs, thresholds = runs_with_truth(Path(out), T0)
    return score(runs, thresholds)


def test_every_run_is_matched_to_its_kind(quality: dict) -> None:
    assert quality["runs"] > 1000 and quality["unmatched_runs"] == 0, quality


def test_each_reason_flags_the_kinds_built_for_it(quality: dict) -> None:
    workload = [r for r in quality["reasons"] if r["reason"] not in POLICY_REASONS]
    for r in workload:
        if r["flagged"]:
            assert r["precision"] >= MIN_PRECISION, r
        if r["judgeable"] >= MIN_JUDGEABLE:
            assert r["recall"] >= MIN_RECALL, r
    assert all(r["judgeable"] >= MIN_JUDGEABLE for r in workload), workload  # every bound was tested


def test_healthy_runs_are_rarely_flagged(quality: dict) -> None:
    assert quality["healthy_judgeable"] >= 50, quality
    assert quality["false_alarm_rate_workload"] <= MAX_FALSE_ALARMS, quality
    assert quality["false_alarm_rate"] <= MAX_FALSE_ALARMS_ANY, quality
    assert quality["runs_flagged"] < quality["runs"] / 2, quality  # a mature cluster's mix
