"""stg_kube__pods on crafted raw.kube_series rows: one test per rule, at its threshold."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

import polars as pl
import pytest

from sources.kube.landing import RAW_KUBE_SERIES_SCHEMA
from transforms.staging.stg_kube__pods import stg_kube__pods

T0 = datetime(2026, 3, 2)
END = datetime(2026, 3, 3)
STEP = 30
NAMESPACES = pl.DataFrame({"cluster": ["c"], "namespace": ["mapped-ns"], "department": ["mapped"]})


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def epoch(seconds: float) -> float:
    return (at(seconds) - datetime(1970, 1, 1)).total_seconds()


def row(
    metric: str,
    pod: str | None,
    first: float,
    last: float,
    value: float = 1.0,
    ns: str = "ns",
    nonzero: float | None = None,
    **labels: str,
) -> dict:
    return {
        "cluster": "c",
        "day": date(2026, 3, 2),
        "metric": metric,
        "namespace": ns,
        "pod": pod,
        "uid": None if pod is None else f"uid-{pod}",
        "labels": json.dumps(labels, sort_keys=True),
        "first_ts": at(first),
        "last_ts": at(last),
        "n_samples": 1,
        "first_value": value,
        "last_value": value,
        "min_value": value,
        "max_value": value,
        "last_nonzero_ts": at(last if nonzero is None else nonzero),
    }


def pod_rows(
    pod: str,
    *,
    created=0,
    scheduled=10,
    started=20,
    last=3600,
    completion=None,
    phase="Running",
    resource="nvidia_com_gpu",
    count=1,
    ns="ns",
    owner=("<none>", "<none>"),
    labels=None,
    limits_only=False,
):
    rows = [
        row("kube_pod_info", pod, created, last, ns=ns, created_by_kind=owner[0], created_by_name=owner[1], node="n1"),
        row("kube_pod_created", pod, created, last, epoch(created), ns=ns),
        row("kube_pod_labels", pod, created, last, ns=ns, **(labels or {})),
    ]
    if scheduled is not None:
        rows.append(row("kube_pod_status_scheduled_time", pod, scheduled, last, epoch(scheduled), ns=ns))
    if started is not None:
        rows.append(row("kube_pod_start_time", pod, started, last, epoch(started), ns=ns))
    if completion is not None:
        rows.append(row("kube_pod_completion_time", pod, completion, last, epoch(completion), ns=ns))
    running_until = completion if completion is not None else last
    rows.append(
        row(
            "kube_pod_status_phase",
            pod,
            created,
            last,
            ns=ns,
            nonzero=running_until - 5 if phase != "Running" else last,
            phase="Running",
        )
    )
    if phase != "Running":
        rows.append(row("kube_pod_status_phase", pod, created, last, ns=ns, phase=phase))
    metric = "kube_pod_container_resource_limits" if limits_only else "kube_pod_container_resource_requests"
    rows.append(row(metric, pod, created, last, count, ns=ns, container="main", resource=resource, unit="integer"))
    rows.append(row(metric, pod, created, last, 4, ns=ns, container="main", resource="cpu", unit="core"))
    return rows


def stage(rows: list[dict], data_end: datetime = END, **options) -> tuple[pl.DataFrame, pl.DataFrame]:
    raw = pl.DataFrame(rows, schema=RAW_KUBE_SERIES_SCHEMA)
    settings = (
        dict(
            window_start=datetime(2026, 3, 1),
            window_end=datetime(2026, 4, 1),
            data_end=data_end,
            step_seconds=STEP,
            department_labels=["label_department", "label_team"],
            queue_label="label_kueue_x_k8s_io_queue_name",
        )
        | options
    )
    return stg_kube__pods(raw, NAMESPACES, **settings)


def one(rows: list[dict], **options) -> dict:
    pods, _ = stage(rows, **options)
    assert pods.height == 1
    return pods.row(0, named=True)


def test_completion_time_is_the_exact_end() -> None:
    pod = one(pod_rows("a", completion=1000, last=4000, phase="Succeeded"))
    assert (pod["end_time"], pod["end_source"], pod["end_error_seconds"]) == (at(1000), "completion_time", 0)
    assert pod["gpu_seconds"] == 980.0 and pod["queue_seconds"] == 10.0 and not pod["is_open"]


def test_finished_without_completion_time_ends_at_last_running_sample() -> None:
    rows = [
        r
        for r in pod_rows("a", completion=1000, last=4000, phase="Failed")
        if r["metric"] != "kube_pod_completion_time"
    ]
    pod = one(rows)
    assert (pod["end_time"], pod["end_source"], pod["end_error_seconds"], pod["phase"]) == (
        at(995),
        "phase",
        STEP,
        "Failed",
    )


def test_deleted_pod_ends_at_its_last_sample_and_open_only_within_a_step_of_data_end() -> None:
    closed = one(pod_rows("a", last=86400 - STEP - 1))
    assert (closed["end_time"], closed["end_source"], closed["is_open"]) == (at(86400 - STEP - 1), "last_sample", False)
    still = one(pod_rows("a", last=86400 - STEP))
    assert still["is_open"] and still["end_time"] is None and still["gpu_seconds"] == 86400 - 20


@pytest.mark.parametrize(
    ("pod_labels", "ns", "ns_labels", "expected"),
    [
        ({"label_team": "t", "label_department": "d"}, "ns", {"label_department": "nsd"}, ("d", "pod_label")),
        ({"label_team": "t"}, "ns", {"label_department": "nsd"}, ("t", "pod_label")),
        ({}, "mapped-ns", {"label_team": "nst"}, ("nst", "namespace_label")),
        ({}, "mapped-ns", {}, ("mapped", "namespace_mapping")),
        ({"label_app": "x"}, "ns", {}, ("unmapped", "unmapped")),
    ],
)
def test_department_precedence(pod_labels, ns, ns_labels, expected) -> None:
    rows = pod_rows("a", ns=ns, labels=pod_labels) + [row("kube_namespace_labels", None, 0, 3600, ns=ns, **ns_labels)]
    pod = one(rows)
    assert (pod["department"], pod["department_source"]) == expected


def test_mig_resources_count_as_profile_fractions_with_the_configured_table() -> None:
    pod = one(pod_rows("a", resource="nvidia_com_mig_3g_40gb", count=2))
    assert (
        pod["gpus"] == pytest.approx(6 / 7)
        and pod["gpu_slots"] == 2
        and pod["is_mig"]
        and pod["mig_profile"] == "3g.40gb"
    )
    weighted = one(pod_rows("a", resource="nvidia_com_mig_3g_40gb", count=2), mig_weights={"3g.40gb": 0.5})
    assert weighted["gpus"] == 1.0


def test_bad_mig_resource_is_quarantined_not_dropped() -> None:
    pods, bad = stage(pod_rows("a", resource="nvidia_com_mig_9x_big") + pod_rows("b"))
    assert pods["pod"].to_list() == ["b"] and bad["location"].to_list() == ["ns/a uid=uid-a"]
    assert "nvidia_com_mig_9x_big" in bad["reason"][0]


def test_non_gpu_pods_are_left_out_and_limits_stand_in_for_requests() -> None:
    pods, _ = stage(pod_rows("cpu", resource="memory") + pod_rows("lim", limits_only=True, count=2))
    assert pods["pod"].to_list() == ["lim"] and pods["gpus"].to_list() == [2.0]


def test_replicaset_owner_gives_the_deployment_name() -> None:
    pod = one(pod_rows("chat-7d9f8b6c4-x2k9p", owner=("ReplicaSet", "chat-7d9f8b6c4")))
    assert pod["deployment_name"] == "chat"
    bare = one(pod_rows("a"))
    assert bare["deployment_name"] is None and bare["owner_kind"] == "<none>"


def test_never_scheduled_pod_has_no_queue_time_nor_card_seconds() -> None:
    pod = one(pod_rows("a", scheduled=None, started=None, last=3600))
    assert pod["queue_seconds"] is None and pod["gpu_seconds"] == 0.0 and pod["phase"] == "Running"


def test_window_keeps_overlapping_pods_only() -> None:
    rows = pod_rows("ended-at-start", completion=100, last=200, phase="Succeeded") + pod_rows(
        "later", created=500, scheduled=510, started=520, last=4000
    )
    pods, _ = stage(rows, window_start=at(100), window_end=at(520))
    assert pods.is_empty()
    pods, _ = stage(rows, window_start=at(99), window_end=at(521))
    assert sorted(pods["pod"]) == ["ended-at-start", "later"]


def test_rows_of_several_days_make_one_pod() -> None:
    day1 = pod_rows("a", last=86400 - STEP)
    day2 = [
        dict(r, day=date(2026, 3, 3), first_ts=at(86400), last_ts=at(90000), last_nonzero_ts=at(90000)) for r in day1
    ]
    pod = one(day1 + day2, data_end=datetime(2026, 3, 4))
    assert pod["end_time"] == at(90000) and pod["gpu_seconds"] == 90000 - 20
