"""stg_kube__jobs on crafted stg_kube__pods rows."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
import pytest

from transforms.staging.stg_kube__jobs import SCHEMA, stg_kube__jobs
from transforms.staging.stg_kube__pods import SCHEMA as POD_SCHEMA
from transforms.staging.stg_slurm__jobs import SCHEMA as SLURM_SCHEMA

T0 = datetime(2026, 3, 2)


def at(seconds: float | None) -> datetime | None:
    return None if seconds is None else T0 + timedelta(seconds=seconds)


def pod(
    name: str,
    owner=("<none>", "<none>"),
    *,
    created=0,
    scheduled=10,
    start=20,
    end=1000,
    is_open=False,
    phase="Succeeded",
    gpus=1.0,
    department="d",
    node="n1",
    deployment=None,
) -> dict:
    return {
        "cluster": "c",
        "namespace": "ns",
        "pod": name,
        "pod_uid": f"uid-{name}",
        "node": node,
        "owner_kind": owner[0],
        "owner_name": owner[1],
        "deployment_name": deployment,
        "priority_class": "batch",
        "queue_name": None,
        "department": department,
        "department_source": "pod_label",
        "phase": phase,
        "created_time": at(created),
        "scheduled_time": at(scheduled),
        "start_time": at(start),
        "end_time": None if is_open else at(end),
        "end_source": "completion_time",
        "end_error_seconds": 0,
        "is_open": is_open,
        "gpus": gpus,
        "gpu_slots": int(gpus),
        "gpu_type": "nvidia_com_gpu",
        "is_mig": False,
        "mig_profile": None,
        "queue_seconds": None if scheduled is None else float(scheduled - created),
        "gpu_seconds": 0.0 if start is None else gpus * ((end or 0) - start),
    }


def jobs_of(*pods: dict) -> pl.DataFrame:
    return stg_kube__jobs(pl.DataFrame(list(pods), schema=POD_SCHEMA))


def test_a_gang_is_one_job_with_summed_gpus_and_the_last_pod_scheduled() -> None:
    owner = ("PyTorchJob", "pt-1")
    jobs = jobs_of(
        pod("pt-1-master-0", owner, scheduled=30, gpus=8, node="n1"),
        pod("pt-1-worker-0", owner, created=5, scheduled=400, gpus=8, node="n2", end=1200),
    )
    assert jobs.height == 1
    job = jobs.row(0, named=True)
    assert (job["job_id"], job["job_name"], job["n_pods"], job["gpus"]) == ("ns/PyTorchJob/pt-1", "pt-1", 2, 16.0)
    assert job["queue_seconds"] == 400.0 and job["end_time"] == at(1200) and job["hosts"] == ["n1", "n2"]
    assert job["gpu_seconds"] == 8 * 980 + 8 * 1180 and job["state"] == "COMPLETED"


def test_gang_with_an_unscheduled_member_has_no_queue_time_yet() -> None:
    owner = ("PodGroup", "vc-1")
    job = jobs_of(pod("a", owner), pod("b", owner, scheduled=None, start=None, is_open=True, phase="Pending")).row(
        0, named=True
    )
    assert job["queue_seconds"] is None and job["is_open"] and job["end_time"] is None and job["state"] == "RUNNING"


def test_bare_and_replica_pods_are_jobs_of_their_own() -> None:
    rs = ("ReplicaSet", "chat-7d9f8b6c4")
    jobs = jobs_of(
        pod("chat-7d9f8b6c4-a", rs, deployment="chat"), pod("chat-7d9f8b6c4-b", rs, deployment="chat"), pod("jupyter-x")
    )
    assert jobs["job_id"].to_list() == ["ns/chat-7d9f8b6c4-a", "ns/chat-7d9f8b6c4-b", "ns/jupyter-x"]
    assert jobs["deployment_name"].to_list() == ["chat", "chat", None] and (jobs["n_pods"] == 1).all()
    assert jobs["job_name"].to_list() == ["chat-7d9f8b6c4-a", "chat-7d9f8b6c4-b", "jupyter-x"]


@pytest.mark.parametrize(
    ("phases", "started", "open_", "state"),
    [
        (["Pending", "Pending"], [False, False], [True, True], "PENDING"),
        (["Running", "Pending"], [True, False], [True, True], "RUNNING"),
        (["Succeeded", "Failed"], [True, True], [False, False], "FAILED"),
        (["Succeeded", "Running"], [True, True], [False, False], "COMPLETED"),
    ],
)
def test_state(phases, started, open_, state) -> None:
    owner = ("Job", "j")
    pods = [
        pod(f"p{i}", owner, phase=ph, start=20 if s else None, is_open=o)
        for i, (ph, s, o) in enumerate(zip(phases, started, open_, strict=True))
    ]
    assert jobs_of(*pods)["state"].to_list() == [state]


def test_department_conflict_is_flagged() -> None:
    owner = ("Job", "j")
    assert jobs_of(pod("a", owner), pod("b", owner))["department_conflict"].to_list() == [False]
    assert jobs_of(pod("a", owner), pod("b", owner, department="e"))["department_conflict"].to_list() == [True]


def test_shared_columns_have_the_slurm_types() -> None:
    shared = set(SCHEMA) & set(SLURM_SCHEMA)
    assert {"job_id", "gpus", "start_time", "end_time", "is_open", "hosts", "scheduler"} <= shared
    assert all(SCHEMA[c] == SLURM_SCHEMA[c] for c in shared)
    assert jobs_of(pod("a"))["scheduler"].to_list() == ["kubernetes"]
