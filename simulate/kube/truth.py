"""``truth_pods.parquet``: the ground truth of every simulated pod, and the pods' GPU
allocations for the sample generator (``truth.ALLOCATION_SCHEMA``)."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import polars as pl

from simulate.kube.pods import Pod
from simulate.truth import ALLOCATION_SCHEMA

TRUTH_PODS_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "pod": pl.String(),
    "pod_uid": pl.String(),
    "namespace": pl.String(),
    "node": pl.String(),
    "owner_kind": pl.String(),
    "owner_name": pl.String(),
    "job_key": pl.String(),  # namespace/pod, or namespace/owner_kind/owner_name
    "deployment_name": pl.String(),
    "scenario": pl.String(),
    "scheduler": pl.String(),  # kueue / volcano / null
    "queue_name": pl.String(),
    "department": pl.String(),
    "department_source": pl.String(),
    "gpus": pl.Float64(),  # MIG slices as compute-slice fractions
    "gpu_slots": pl.Int32(),
    "mig_profile": pl.String(),
    "kind": pl.String(),
    "submit_time": pl.Datetime("us"),  # the workload's submission (Kueue: before the pods exist)
    "created_time": pl.Datetime("us"),
    "scheduled_time": pl.Datetime("us"),
    "start_time": pl.Datetime("us"),
    "end_time": pl.Datetime("us"),  # GPUs released; null: running at the window end
    "deleted_time": pl.Datetime("us"),  # series end; null: past the window end
    "has_completion_time": pl.Boolean(),
    "phase": pl.String(),  # at the window end, or when deleted
    "queue_seconds": pl.Float64(),  # created -> scheduled
    "gpu_seconds": pl.Float64(),  # gpus x (end, clipped to the window end, - start)
    "gpu_instances": pl.List(pl.String()),
    "n_scrapes": pl.Int64(),  # kube-state-metrics samples of the pod (0: too short-lived to be seen)
}


def marker(index: int) -> str:
    """The ``hpc_job`` value that stands for pod ``index`` inside the sample generator."""
    return str(900_000 + index)


def _at(origin: datetime, t: int | None) -> datetime | None:
    return None if t is None else origin + timedelta(seconds=t)


def truth_pods(pods: list[Pod], cluster: str, origin: datetime, window: int, step: int) -> pl.DataFrame:
    rows = []
    for pod in pods:
        held = 0 if pod.started is None else (pod.end if pod.end is not None else window) - pod.started
        gone = pod.deleted if pod.deleted is not None else window
        last = gone - 1
        rows.append(
            {
                "cluster": cluster,
                "pod": pod.name,
                "pod_uid": pod.uid,
                "namespace": pod.namespace,
                "node": pod.instances[0][0] if pod.instances else None,
                "owner_kind": pod.owner_kind,
                "owner_name": pod.owner_name,
                "job_key": pod.job,
                "deployment_name": pod.deployment,
                "scenario": pod.scenario,
                "scheduler": pod.scheduler,
                "queue_name": pod.queue_name,
                "department": pod.department,
                "department_source": pod.department_source,
                "gpus": pod.gpus,
                "gpu_slots": len(pod.instances) if pod.instances else pod.count,
                "mig_profile": pod.mig_profile,
                "kind": pod.kind,
                "submit_time": _at(origin, pod.submit if pod.submit is not None else pod.created),
                "created_time": _at(origin, pod.created),
                "scheduled_time": _at(origin, pod.scheduled),
                "start_time": _at(origin, pod.started),
                "end_time": _at(origin, pod.end),
                "deleted_time": _at(origin, pod.deleted),
                "has_completion_time": pod.completion_time and pod.end is not None,
                "phase": pod.phase_at(last),
                "queue_seconds": None if pod.scheduled is None else float(pod.scheduled - pod.created),
                "gpu_seconds": float(held * pod.gpus),
                "gpu_instances": [":".join(str(x) for x in i if x is not None) for i in pod.instances],
                "n_scrapes": max(0, -(-gone // step) - -(-pod.created // step)),
            }
        )
    return pl.DataFrame(rows, schema=TRUTH_PODS_SCHEMA).sort("namespace", "pod")


def pod_allocations(pods: list[Pod], origin: datetime, seed: int) -> pl.DataFrame:
    """One row per (started pod, GPU or MIG instance), keyed by the pod's marker."""
    rows = []
    for index, pod in enumerate(pods):
        if pod.started is None:
            continue
        run_seed = int(np.random.SeedSequence([seed, 7, index]).generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
        for host, gpu, gi_id in pod.instances:
            rows.append(
                (marker(index), 0, host, gpu, gi_id, _at(origin, pod.started), _at(origin, pod.end), pod.kind, run_seed)
            )
    return pl.DataFrame(rows, schema=ALLOCATION_SCHEMA, orient="row")
