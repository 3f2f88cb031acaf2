"""int_gpu_minutes_attributed, Kubernetes side: DCGM minutes tied to pods by their pod/namespace
labels, time-sliced GPUs split between the pods holding them, Slurm rules untouched."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl
import pytest

from tests.unit.test_int_gpu_minutes_attributed import land_minutes
from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA, int_gpu_minutes_attributed_sql
from transforms.staging.stg_dcgm__gpu_minutely import SCHEMA as MINUTELY_SCHEMA
from transforms.staging.stg_kube__pods import SCHEMA as PODS_SCHEMA
from transforms.staging.stg_slurm__jobs import SCHEMA as JOBS_SCHEMA
from warehouse import connect, replace_partition

MONTH = date(2024, 3, 1)
MARCH = (datetime(2024, 3, 1), datetime(2024, 4, 1))
T0 = datetime(2024, 3, 10, 10)
HOSTS = {"k1": 8.0, "n1": 8.0}


def pod(
    name: str,
    start: datetime | None,
    end: datetime | None,
    namespace: str = "ml",
    owner_kind: str | None = None,
    owner_name: str | None = None,
    node: str = "k1",
    gpus: float = 1.0,
) -> dict:
    return {c: None for c in PODS_SCHEMA} | {
        "cluster": "c1",
        "namespace": namespace,
        "pod": name,
        "pod_uid": f"uid-{name}",
        "node": node,
        "owner_kind": owner_kind,
        "owner_name": owner_name,
        "start_time": start,
        "end_time": end,
        "created_time": start,
        "gpus": gpus,
        "gpu_slots": 1,
        "is_mig": False,
        "is_open": end is None,
    }


def minute(
    at: datetime,
    pod_name: str | None = None,
    namespace: str | None = "ml",
    gpu: int = 0,
    host: str = "k1",
    n: int = 2,
    hpc_job: str | None = None,
    sm: float = 0.5,
) -> dict:
    return {c: None for c in MINUTELY_SCHEMA} | {
        "cluster": "c1",
        "hostname": host,
        "gpu": gpu,
        "uuid": f"GPU-{host}-{gpu}",
        "hpc_job": hpc_job,
        "pod": pod_name,
        "namespace": namespace if pod_name else None,
        "minute": at,
        "n_samples": n,
        "expected_samples": 2,
        "coverage": min(n / 2, 1.0),
        "sm_active_mean": sm,
        "best_signal_mean": sm,
        "power_w_mean": 300.0,
    }


def attribute(pods: list[dict], minutes: list[dict], runs: list[dict] = (), whole_hours: bool = True) -> pl.DataFrame:
    with connect(":memory:") as conn:
        month = {"month": MONTH}
        replace_partition(
            conn,
            "staging.stg_kube__pods",
            pl.DataFrame(pods, schema=PODS_SCHEMA).with_columns(month=pl.lit(MONTH)),
            month,
        )
        replace_partition(
            conn,
            "staging.stg_slurm__jobs",
            pl.DataFrame(list(runs), schema=JOBS_SCHEMA).with_columns(month=pl.lit(MONTH)),
            month,
        )
        rows = pl.DataFrame(minutes, schema=MINUTELY_SCHEMA).with_columns(day=pl.col("minute").dt.date())
        land_minutes(conn, rows, 30)
        text, params = int_gpu_minutes_attributed_sql(
            "c1", MARCH[0], *MARCH, 30, list(HOSTS), list(HOSTS.values()), 0.01, whole_hours=whole_hours
        )
        return conn.sql(text, params=params).pl().cast(SCHEMA)


def by(out: pl.DataFrame, *keys: str) -> dict:
    return {
        row[:-1] if len(row) > 2 else row[0]: row[-1] for row in out.group_by(*keys).agg(pl.col("samples").sum()).rows()
    }


@pytest.mark.parametrize("whole_hours", [True, False])
def test_pod_label_inside_the_pod_else_unattributed(whole_hours: bool) -> None:
    pods = [pod("web-1", T0 + timedelta(seconds=20), T0 + timedelta(minutes=3))]
    minutes = [
        minute(T0, "web-1"),  # the pod starts inside this minute
        minute(T0 + timedelta(minutes=2), "web-1"),
        minute(T0 + timedelta(minutes=3), "web-1"),  # after its end: no pod covers it
        minute(T0 + timedelta(minutes=2), "web-1", namespace="other", gpu=2),  # same name, other namespace
        minute(T0 + timedelta(minutes=2), "web-1", gpu=1, n=3),
    ]
    out = attribute(pods, minutes, whole_hours=whole_hours)
    assert by(out, "job_id_raw", "attribution_method") == {("ml/web-1", "pod_label"): 7.0, (None, "unattributed"): 4.0}
    assert out.filter(pl.col("job_id_raw") == "ml/web-1")["start_time"].unique().to_list() == [pods[0]["start_time"]]
    assert out["split_off_samples"].sum() == 0.0


def test_pods_of_one_owner_are_one_job_replica_pods_their_own() -> None:
    pods = [
        pod("train-w0", T0, None, owner_kind="PyTorchJob", owner_name="train"),
        pod("train-w1", T0 + timedelta(minutes=1), None, owner_kind="PyTorchJob", owner_name="train"),
        pod("api-abc12", T0, None, owner_kind="ReplicaSet", owner_name="api-5d8f7"),
    ]
    minutes = [
        minute(T0 + timedelta(minutes=2), "train-w0", gpu=0),
        minute(T0 + timedelta(minutes=2), "train-w1", gpu=1),
        minute(T0 + timedelta(minutes=2), "api-abc12", gpu=2),
    ]
    out = attribute(pods, minutes)
    assert by(out, "job_id_raw", "start_time") == {("ml/PyTorchJob/train", T0): 4.0, ("ml/api-abc12", T0): 2.0}


def test_time_sliced_gpu_splits_the_minute_between_its_pods_and_says_so() -> None:
    pods = [pod("a", T0, None), pod("b", T0, None), pod("c", T0, None)]
    at = T0 + timedelta(minutes=5)
    # dcgm-exporter repeats each of the GPU's 2 samples of the minute once per pod holding it
    minutes = [minute(at, "a"), minute(at, "b"), minute(at, "c"), minute(at, "a", gpu=1)]
    out = attribute(pods, minutes)
    shared = out.filter(pl.col("gpu") == 0)
    assert set(shared["attribution_method"]) == {"pod_shared"}
    assert shared["samples"].to_list() == pytest.approx([2 / 3] * 3)
    assert shared["split_off_samples"].sum() == pytest.approx(4.0)
    assert shared["sm_active_sum"].sum() == pytest.approx(0.5 * 2)  # the GPU's samples, once
    alone = out.filter(pl.col("gpu") == 1)
    assert alone["attribution_method"].to_list() == ["pod_label"] and alone["samples"].to_list() == [2.0]
    assert out["samples"].sum() + out["split_off_samples"].sum() == pytest.approx(8.0)


def test_pods_following_each_other_within_a_minute_are_not_split() -> None:
    at = T0 + timedelta(minutes=5)
    pods = [pod("old", T0, at + timedelta(seconds=30)), pod("new", at + timedelta(seconds=30), None)]
    out = attribute(pods, [minute(at, "old", n=1), minute(at, "new", n=1)])
    assert by(out, "job_id_raw", "attribution_method") == {("ml/old", "pod_label"): 1.0, ("ml/new", "pod_label"): 1.0}
    assert out["split_off_samples"].sum() == 0.0


def test_a_recreated_pod_name_covering_one_minute_twice_keeps_the_samples_once() -> None:
    at = T0 + timedelta(minutes=5)
    first = pod("web-0", T0, at + timedelta(seconds=10), owner_kind="StatefulSet", owner_name="web")
    second = pod("web-0", at + timedelta(seconds=40), None, owner_kind="StatefulSet", owner_name="web") | {
        "pod_uid": "u2"
    }
    out = attribute([first, second], [minute(at, "web-0")])
    assert out["samples"].sum() == pytest.approx(2.0) and set(out["attribution_method"]) == {"pod_label"}


def test_unlabelled_gpus_on_a_pod_host_are_unallocated_and_slurm_rules_unchanged() -> None:
    run = {c: None for c in JOBS_SCHEMA} | {
        "cluster": "c1",
        "scheduler": "slurm",
        "job_id": "7",
        "job_id_raw": "7",
        "submit_time": T0,
        "start_time": T0,
        "end_time": T0 + timedelta(hours=1),
        "gpus": 8.0,
        "gpu_slots": 8,
        "is_mig": False,
        "n_nodes": 1,
        "hosts": ["n1"],
    }
    at = T0 + timedelta(minutes=5)
    minutes = [
        minute(at, "a"),
        minute(at, None, gpu=1),
        minute(at, None, host="n1"),
        minute(at, None, host="n1", hpc_job="7", gpu=2),
    ]
    out = attribute([pod("a", T0, None)], minutes, runs=[run])
    assert by(out, "hostname", "attribution_method") == {
        ("k1", "pod_label"): 2.0,
        ("k1", "unallocated"): 2.0,
        ("n1", "hpc_job_label"): 2.0,
        ("n1", "unallocated"): 2.0,
    }


def test_pods_never_started_or_outside_the_period_take_nothing() -> None:
    at = T0 + timedelta(minutes=5)
    pods = [pod("pending", None, None), pod("done", T0 - timedelta(days=20), T0 - timedelta(days=19))]
    out = attribute(pods, [minute(at, "pending"), minute(at, "done", gpu=1)])
    assert by(out, "attribution_method") == {"unattributed": 4.0}
