"""GE suites on the staged Kubernetes pods and jobs: a good frame passes; each rule fails on a
frame that breaks it (and not at its boundary)."""

from __future__ import annotations

from datetime import datetime, timedelta

import dagster as dg
import polars as pl
import pytest

from config.frames import INVENTORY_SCHEMA
from pipelines.checks.gx_adapter import run_suite_on_frame
from pipelines.checks.kube_suites import (
    staged_kube_jobs_frame,
    staged_kube_jobs_suite,
    staged_pods_frame,
    staged_pods_suite,
)
from pipelines.checks.suites import node_gpu_capacity
from transforms.staging.stg_kube__jobs import stg_kube__jobs
from transforms.staging.stg_kube__pods import SCHEMA as PODS_SCHEMA

T0 = datetime(2026, 3, 2, 8)
PAIR = "expect_column_pair_values_a_to_be_greater_than_b"
INVENTORY = pl.DataFrame(
    [
        {c: None for c in INVENTORY_SCHEMA} | {"cluster": "c1", "hostname": "k1", "gpu": g, "gpu_fraction": 1.0}
        for g in range(4)
    ],
    schema=INVENTORY_SCHEMA,
)


def pod(name: str, **over: object) -> dict:
    return (
        {c: None for c in PODS_SCHEMA}
        | {
            "cluster": "c1",
            "namespace": "ml",
            "pod": name,
            "pod_uid": f"u-{name}",
            "node": "k1",
            "phase": "Succeeded",
            "department": "physics",
            "department_source": "pod_label",
            "created_time": T0,
            "scheduled_time": T0 + timedelta(seconds=5),
            "start_time": T0 + timedelta(seconds=9),
            "end_time": T0 + timedelta(hours=1),
            "end_source": "completion_time",
            "end_error_seconds": 0,
            "is_open": False,
            "gpus": 2.0,
            "gpu_slots": 2,
            "gpu_type": "nvidia_com_gpu",
            "is_mig": False,
            "queue_seconds": 5.0,
            "gpu_seconds": 7182.0,
        }
        | over
    )


def check_pods(rows: list[dict]) -> dg.AssetCheckResult:
    frame = staged_pods_frame(pl.DataFrame(rows, schema=PODS_SCHEMA), INVENTORY)
    return run_suite_on_frame(staged_pods_suite(), frame, ["staging", "stg_kube__pods"], "gx_stg_kube__pods")


def failed(result: dg.AssetCheckResult) -> list[str]:
    return [item["expectation"] for item in result.metadata["failed_expectations"].value]


def test_good_pods_pass_including_a_pod_holding_the_whole_node() -> None:
    result = check_pods(
        [
            pod("a"),
            pod("b", gpus=4.0, gpu_slots=4),
            pod("c", node="elsewhere", gpus=16.0),
            pod("d", end_time=None, phase="Running", is_open=True),
            pod("e", scheduled_time=T0, start_time=T0, end_time=T0),
        ]
    )  # equal times pass
    assert result.passed, failed(result)


@pytest.mark.parametrize(
    ("over", "rule"),
    [
        ({"pod": "a", "pod_uid": "u-a"}, "expect_compound_columns_to_be_unique"),
        ({"phase": "Exploded"}, "expect_column_values_to_be_in_set"),
        ({"scheduled_time": T0 - timedelta(seconds=1)}, PAIR),
        ({"start_time": T0 + timedelta(seconds=4)}, PAIR),
        ({"end_time": T0 + timedelta(seconds=8)}, PAIR),
        ({"gpus": 0.0}, "expect_column_values_to_be_between"),
        ({"gpus": 5.0}, PAIR),
        ({"department": None}, "expect_column_values_to_not_be_null"),
    ],
)
def test_each_pod_rule_catches_a_bad_row(over: dict, rule: str) -> None:
    result = check_pods([pod("a"), pod("b", **over)])
    assert not result.passed and any(rule in name for name in failed(result)), failed(result)


def test_jobs_suite_passes_staged_gangs_and_catches_a_duplicate_and_bad_state() -> None:
    pods = pl.DataFrame(
        [
            pod("t-0", owner_kind="PyTorchJob", owner_name="t"),
            pod("t-1", owner_kind="PyTorchJob", owner_name="t", pod_uid="u-t1"),
            pod("solo"),
            pod("pending", node=None, phase="Pending", scheduled_time=None, start_time=None, end_time=None),
        ],
        schema=PODS_SCHEMA,
    )
    jobs = stg_kube__jobs(pods)
    capacity = node_gpu_capacity(INVENTORY)
    key, name = ["staging", "stg_kube__jobs"], "gx_stg_kube__jobs"
    good = run_suite_on_frame(staged_kube_jobs_suite(), staged_kube_jobs_frame(jobs, capacity), key, name)
    assert good.passed, failed(good)
    bad = pl.concat([jobs, jobs.head(1).with_columns(state=pl.lit("LOST"))])
    result = run_suite_on_frame(staged_kube_jobs_suite(), staged_kube_jobs_frame(bad, capacity), key, name)
    names = failed(result)
    assert not result.passed and any("unique" in n for n in names) and any("in_set" in n for n in names), names
